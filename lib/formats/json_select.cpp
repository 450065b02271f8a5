#include "formats/json_select.hpp"

#include <array>
#include <charconv>
#include <new>
#include <string>
#include <system_error>
#include <vector>

#include <boost/json/basic_parser_impl.hpp>

#include "formats/json_file.hpp"
#include "lwload/error.hpp"

namespace lwload::formats {
namespace {

namespace json = boost::json;

constexpr std::size_t kChunk = 64 * 1024;

struct OverBudget {};

// The arena's upstream: counts what the tree takes and stops it at the cap.
class CappedResource final : public json::memory_resource {
 public:
  explicit CappedResource(std::uint64_t cap) : cap_(cap) {}

 private:
  void* do_allocate(std::size_t n, std::size_t align) override {
    if (n > cap_ - used_) throw OverBudget{};
    used_ += n;
    return ::operator new(n, std::align_val_t(align));
  }
  void do_deallocate(void* p, std::size_t n, std::size_t align) override {
    used_ -= n;
    ::operator delete(p, std::align_val_t(align));
  }
  bool do_is_equal(const json::memory_resource& other) const noexcept override { return this == &other; }

  std::uint64_t cap_;
  std::uint64_t used_ = 0;
};

// A value_stack fed by basic_parser (as Boost's own parser does), with the members of the top-level
// object that are not wanted skipped: their events change nothing but the depth.
struct Selecting : JsonHandlerBasics {

  json::value_stack st;
  std::vector<std::string_view> keep;
  explicit Selecting(json::storage_ptr temp) : st(std::move(temp)) {}
  std::size_t depth = 0;          // containers open
  bool root_object = false;
  bool skipping = false;          // inside a dropped member's value
  std::size_t skip_depth = 0;     // the depth its container opened at
  bool next_dropped = false;      // the top-level key just read is not kept
  std::size_t dropped = 0;        // top-level members dropped
  std::string key;                // a top-level key while it arrives (at most 64 bytes kept)
  bool key_too_long = false;
  std::string number;             // a number's text received in parts

  bool top_level_key() const { return root_object && depth == 1; }
  // A scalar value begins: dropped when it is a dropped member's value.
  bool scalar() {
    if (skipping) return false;
    if (next_dropped && top_level_key()) {
      next_dropped = false;
      ++dropped;
      return false;
    }
    return true;
  }
  bool open(bool object) {
    if (depth == 0) root_object = object;
    if (!skipping && next_dropped && top_level_key()) {
      next_dropped = false;
      skipping = true;
      skip_depth = depth;
    }
    ++depth;
    return true;
  }
  // True when the container closing belongs to the kept tree.
  bool close() {
    --depth;
    if (skipping) {
      if (depth == skip_depth) {
        skipping = false;
        ++dropped;
      }
      return false;
    }
    return true;
  }

  bool on_document_begin(error_code&) { return true; }
  bool on_document_end(error_code&) { return true; }
  bool on_object_begin(error_code&) { return open(true); }
  bool on_object_end(std::size_t n, error_code&) {
    if (close()) st.push_object(depth == 0 ? n - dropped : n);
    return true;
  }
  bool on_array_begin(error_code&) { return open(false); }
  bool on_array_end(std::size_t n, error_code&) {
    if (close()) st.push_array(n);
    return true;
  }
  bool on_key_part(string_view s, std::size_t, error_code&) {
    if (skipping) return true;
    if (top_level_key()) {
      if (key.size() + s.size() > 64) key_too_long = true;
      else key.append(s.data(), s.size());
      return true;
    }
    return st.push_chars(s), true;
  }
  bool on_key(string_view s, std::size_t, error_code& ec) {
    if (skipping) return true;
    if (!top_level_key()) return st.push_key(s), true;
    on_key_part(s, 0, ec);
    bool kept = false;
    if (!key_too_long)
      for (const std::string_view k : keep) kept = kept || key == k;
    if (kept) st.push_key(key);
    next_dropped = !kept;
    key.clear();
    key_too_long = false;
    return true;
  }
  bool on_string_part(string_view s, std::size_t, error_code&) {
    if (!skipping && !(next_dropped && top_level_key())) st.push_chars(s);
    return true;
  }
  bool on_string(string_view s, std::size_t, error_code&) {
    if (scalar()) st.push_string(s);
    return true;
  }
  bool on_number_part(string_view s, error_code&) {
    if (!skipping) number.append(s.data(), s.size());
    return true;
  }
  bool on_int64(std::int64_t i, string_view, error_code&) {
    number.clear();
    if (scalar()) st.push_int64(i);
    return true;
  }
  bool on_uint64(std::uint64_t u, string_view, error_code&) {
    number.clear();
    if (scalar()) st.push_uint64(u);
    return true;
  }
  // Exact from the number's own text, as read_json's ExactNumbers (Boost 1.81 rounds some wrong).
  bool on_double(double approximate, string_view s, error_code&) {
    if (!scalar()) {
      number.clear();
      return true;
    }
    number.append(s.data(), s.size());
    double exact = approximate;
    const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), exact);
    number.clear();
    st.push_double(ec == std::errc() ? exact : approximate);
    return true;
  }
  bool on_bool(bool b, error_code&) {
    if (scalar()) st.push_bool(b);
    return true;
  }
  bool on_null(error_code&) {
    if (scalar()) st.push_null();
    return true;
  }
  bool on_comment_part(string_view, error_code&) { return true; }
  bool on_comment(string_view, error_code&) { return true; }
};

}  // namespace

json::value read_json_members(const RandomAccessFile& file, std::uint64_t begin, std::uint64_t length,
                              std::string_view what, std::initializer_list<std::string_view> keep,
                              std::uint64_t max_tree_bytes) {
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
    std::array<char, kChunk> chunk;
    boost::system::error_code ec;
    std::uint64_t done = 0;
    const auto malformed = [&](std::uint64_t at) {
      fail(ErrorCode::bad_input, file.path().string(), ": ", what, ": malformed JSON at byte ", at, " of the file: ",
           ec.message());
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
  }
  return {};
}

}  // namespace lwload::formats
