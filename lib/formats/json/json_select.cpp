#include "formats/json/json_select.hpp"

#include <array>
#include <charconv>
#include <new>
#include <string>
#include <system_error>
#include <vector>

#include <boost/json/basic_parser_impl.hpp>

#include "formats/json/json_file.hpp"
#include "lwload/error.hpp"

namespace lwload::formats {
namespace {

namespace json = boost::json;

constexpr std::size_t kChunk = 64 * 1024;

struct OverBudget {};
// A holder with the streamed key twice (JSON.parse keeps the last, Boost.JSON's tree the first).
struct TwiceStreamed {};

// The arena's upstream: counts what the tree takes and stops it at the cap.
class CappedResource final : public json::memory_resource {
 public:
  explicit CappedResource(std::uint64_t cap) : cap_(cap) {}

 private:
  // Alignments up to new's own are served by plain new and delete: Boost.JSON 1.81 frees an
  // unfinished key (a parse ended by an error) with another alignment than it asked for.
  void* do_allocate(std::size_t n, std::size_t align) override {
    if (n > cap_ - used_) throw OverBudget{};
    used_ += n;
    if (align <= __STDCPP_DEFAULT_NEW_ALIGNMENT__) return ::operator new(n);
    return ::operator new(n, std::align_val_t(align));
  }
  void do_deallocate(void* p, std::size_t n, std::size_t align) override {
    used_ -= n;
    if (align <= __STDCPP_DEFAULT_NEW_ALIGNMENT__) ::operator delete(p);
    else ::operator delete(p, std::align_val_t(align));
  }
  bool do_is_equal(const json::memory_resource& other) const noexcept override { return this == &other; }

  std::uint64_t cap_;
  std::uint64_t used_ = 0;
};

// A value_stack fed by basic_parser (as Boost's own parser does), with the members of the top-level
// object that are not wanted skipped (their events change nothing but the depth), and the items of
// a streamed container built each in a value_stack of its own and handed over as it closes.
struct Selecting : JsonHandlerBasics {
  json::value_stack st;
  std::vector<std::string_view> keep;
  explicit Selecting(json::storage_ptr temp) : st(temp), item(temp) {}
  std::size_t depth = 0;  // containers open
  bool root_object = false;
  bool skipping = false;       // inside a dropped member's value
  std::size_t skip_depth = 0;  // the depth its container opened at
  bool next_dropped = false;   // the top-level key just read is not kept
  std::size_t dropped = 0;     // top-level members dropped
  std::string key;             // a top-level key while it arrives (at most 64 bytes kept)
  bool key_too_long = false;
  std::string number;  // a number's text received in parts

  // Streaming (StreamedItems): where the holders are and which of them is open.
  const StreamedItems* streamed = nullptr;
  json::storage_ptr item_storage;   // each item's tree, freed once handed over
  std::string member;               // the top-level member being read (object documents)
  std::size_t holders = 0;          // values begun at the holders' level so far (objects or not)
  std::string holder_key;           // a holder's key while it arrives (at most 64 bytes kept)
  bool next_streamed = false;       // the holder key just read is StreamedItems::key
  bool streamed_in_holder = false;  // the open holder's container was streamed already
  bool streaming = false;           // inside the streamed container
  std::size_t container_depth = 0;  // the depth inside it
  json::value_stack item;           // the item being built
  bool in_item = false;             // a container item is open
  bool in_string_item = false;      // a string item is arriving in parts
  std::string item_key;             // an object container's member key

  bool top_level_key() const { return root_object && depth == 1; }
  std::size_t holder_depth() const {
    if (!streamed) return 0;
    return root_object ? streamed->holder_depth_in_object : streamed->holder_depth_in_array;
  }
  bool in_scope() const {
    return holder_depth() != 0 && !skipping &&
           (!root_object || holder_depth() == 1 || streamed->within.empty() || member == streamed->within);
  }
  // At the streamed container's own level: its items begin here.
  bool at_items() const { return streaming && !in_item && depth == container_depth; }
  // A value begins at the holders' level: counted whatever it is, so a holder's number is its
  // position there (its index in the array that lists it), and only an object opens a holder.
  void value_begins() {
    if (holder_depth() == 0 || in_item || streaming || depth + 1 != holder_depth() || (depth != 0 && !in_scope()))
      return;
    ++holders;
    streamed_in_holder = false;
  }

  void deliver() {
    json::value value = item.release();
    streamed->each(holders - 1, item_key, std::move(value));
    item_key.clear();
  }
  // Where a value's events go: the open item's stack, or the kept tree.
  json::value_stack& out() { return in_item ? item : st; }

  // A scalar value begins: dropped, pushed where out() says, or (an item itself) built and handed
  // over here.
  template <typename Push>
  void scalar(Push&& push) {
    if (skipping) return;
    if (next_dropped && top_level_key()) {
      next_dropped = false;
      ++dropped;
      return;
    }
    next_streamed = false;  // a scalar under the streamed key is kept as it is (the reader refuses it)
    value_begins();
    if (at_items()) {
      item.reset(item_storage);
      push(item);
      deliver();
      return;
    }
    push(out());
  }
  void open(bool object) {
    if (depth == 0) root_object = object;
    if (!skipping && next_dropped && top_level_key()) {
      next_dropped = false;
      skipping = true;
      skip_depth = depth;
    }
    if (!skipping && holder_depth() != 0) {
      if (at_items()) {
        in_item = true;
        item.reset(item_storage);
      } else if (!in_item && next_streamed && depth == holder_depth()) {
        if (streamed_in_holder) throw TwiceStreamed{};
        next_streamed = false;
        streamed_in_holder = true;
        streaming = true;
        container_depth = depth + 1;
      } else {
        value_begins();
      }
    }
    ++depth;
  }
  // How a closing container goes: dropped (skipped), into the kept tree or an item, or the
  // streamed container itself (kept empty).
  enum class Closing { dropped, kept, item, streamed };
  Closing close() {
    --depth;
    if (skipping) {
      if (depth == skip_depth) {
        skipping = false;
        ++dropped;
      }
      return Closing::dropped;
    }
    if (in_item) return Closing::item;
    if (streaming && depth + 1 == container_depth) {
      streaming = false;
      return Closing::streamed;
    }
    return Closing::kept;
  }
  // The key of a member at the holder's level, or a top-level key, while it arrives.
  static void append_key(std::string& to, string_view s, bool& too_long) {
    if (to.size() + s.size() > 64) too_long = true;
    else to.append(s.data(), s.size());
  }
  bool holder_level() const { return !in_item && !streaming && in_scope() && depth == holder_depth(); }

  bool on_document_begin(error_code&) { return true; }
  bool on_document_end(error_code&) { return true; }
  bool on_object_begin(error_code&) { return open(true), true; }
  // A container closes: into the kept tree (`n` members or elements; the top-level object's less
  // those dropped), as the streamed container (kept empty), or into the open item, which is
  // handed over once whole.
  void closed(bool object, std::size_t n) {
    const auto push = [object](json::value_stack& to, std::size_t count) {
      if (object) to.push_object(count);
      else to.push_array(count);
    };
    switch (close()) {
      case Closing::dropped: break;
      case Closing::kept: push(st, depth == 0 ? n - dropped : n); break;
      case Closing::streamed: push(st, 0); break;
      case Closing::item:
        push(item, n);
        if (depth == container_depth) {
          in_item = false;
          deliver();
        }
        break;
    }
  }
  bool on_object_end(std::size_t n, error_code&) { return closed(true, n), true; }
  bool on_array_begin(error_code&) { return open(false), true; }
  bool on_array_end(std::size_t n, error_code&) { return closed(false, n), true; }
  bool on_key_part(string_view s, std::size_t, error_code&) {
    if (skipping) return true;
    if (at_items()) return item_key.append(s.data(), s.size()), true;
    if (top_level_key()) return append_key(key, s, key_too_long), true;
    if (holder_level()) append_key(holder_key, s, key_too_long);
    return out().push_chars(s), true;
  }
  bool on_key(string_view s, std::size_t, error_code& ec) {
    if (skipping) return true;
    if (at_items()) return item_key.append(s.data(), s.size()), true;
    if (!top_level_key()) {
      if (holder_level()) {
        append_key(holder_key, s, key_too_long);
        next_streamed = !key_too_long && holder_key == streamed->key;
        holder_key.clear();
        key_too_long = false;
      }
      return out().push_key(s), true;
    }
    on_key_part(s, 0, ec);
    bool kept = false;
    if (!key_too_long)
      for (const std::string_view k : keep) kept = kept || key == k;
    if (kept) {
      st.push_key(key);
      member = key;
      next_streamed = holder_depth() == 1 && key == streamed->key;
    }
    next_dropped = !kept;
    key.clear();
    key_too_long = false;
    return true;
  }
  bool on_string_part(string_view s, std::size_t, error_code&) {
    if (skipping || (next_dropped && top_level_key())) return true;
    if (at_items()) {
      // A string item arriving in parts: its own stack, handed over when on_string ends it.
      if (!in_string_item) item.reset(item_storage);
      in_string_item = true;
      return item.push_chars(s), true;
    }
    return out().push_chars(s), true;
  }
  bool on_string(string_view s, std::size_t, error_code&) {
    if (in_string_item) {
      in_string_item = false;
      next_streamed = false;
      item.push_string(s);
      deliver();
      return true;
    }
    scalar([&](json::value_stack& to) { to.push_string(s); });
    return true;
  }
  bool on_number_part(string_view s, error_code&) {
    if (!skipping) number.append(s.data(), s.size());
    return true;
  }
  bool on_int64(std::int64_t i, string_view, error_code&) {
    number.clear();
    scalar([&](json::value_stack& to) { to.push_int64(i); });
    return true;
  }
  bool on_uint64(std::uint64_t u, string_view, error_code&) {
    number.clear();
    scalar([&](json::value_stack& to) { to.push_uint64(u); });
    return true;
  }
  // Exact from the number's own text, as read_json's ExactNumbers (Boost 1.81 rounds some wrong).
  bool on_double(double approximate, string_view s, error_code&) {
    number.append(s.data(), s.size());
    double exact = approximate;
    const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), exact);
    number.clear();
    const double value = ec == std::errc() ? exact : approximate;
    scalar([&](json::value_stack& to) { to.push_double(value); });
    return true;
  }
  bool on_bool(bool b, error_code&) {
    scalar([&](json::value_stack& to) { to.push_bool(b); });
    return true;
  }
  bool on_null(error_code&) {
    scalar([&](json::value_stack& to) { to.push_null(); });
    return true;
  }
  bool on_comment_part(string_view, error_code&) { return true; }
  bool on_comment(string_view, error_code&) { return true; }
};

}  // namespace

json::value read_json_members(const RandomAccessFile& file, std::uint64_t begin, std::uint64_t length,
                              std::string_view what, std::initializer_list<std::string_view> keep,
                              std::uint64_t max_tree_bytes, const StreamedItems* streamed) {
  const auto too_big = [&] {
    fail(ErrorCode::bad_input, file.path().string(), ": ", what, ": its JSON needs more than ", max_tree_bytes,
         " bytes of memory to hold (its text: ", length, " bytes); refusing it");
  };
  json::parse_options options;
  options.max_depth = 64;
  try {
    json::storage_ptr upstream = json::make_shared_resource<CappedResource>(max_tree_bytes);
    // The value stack's temporary storage (a container's elements until it closes) is capped with
    // the tree: a wide array costs there first.
    json::basic_parser<Selecting> parser(options, upstream);
    parser.handler().st.reset(json::make_shared_resource<json::monotonic_resource>(std::size_t{64 * 1024}, upstream));
    parser.handler().keep.assign(keep.begin(), keep.end());
    parser.handler().streamed = streamed;
    parser.handler().item_storage = upstream;
    std::array<char, kChunk> chunk;
    boost::system::error_code ec;
    std::uint64_t done = 0;
    const auto malformed = [&](std::uint64_t at) {
      fail(ErrorCode::bad_input, file.path().string(), ": ", what, ": malformed JSON at byte ", at,
           " of the file: ", ec.message());
    };
    while (done < length) {
      const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(chunk.size(), length - done));
      file.read_exact(begin + done, std::as_writable_bytes(std::span(chunk.data(), want)), "JSON text");
      const std::size_t used = parser.write_some(true, chunk.data(), want, ec);
      if (!ec && used < want) ec = json::error::extra_data;
      if (ec) malformed(begin + done + used);
      done += want;
    }
    parser.write_some(false, nullptr, 0, ec);
    if (ec) malformed(begin + length);
    return parser.handler().st.release();
  } catch (const OverBudget&) {
    too_big();
  } catch (const TwiceStreamed&) {
    fail(ErrorCode::bad_input, file.path().string(), ": ", what, ": member '", streamed->key,
         "' appears twice in one object; which one is meant is ambiguous (JSON readers differ: the first or the last)");
  }
  return {};
}

}  // namespace lwload::formats
