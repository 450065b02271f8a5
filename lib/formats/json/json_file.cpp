// JSON parsing through the file seam with Boost.JSON's incremental parser: the text is fed in
// fixed-size chunks (feed_json, json_file.hpp; no copy of the whole header), the tree goes into a
// monotonic arena, a syntax error reports the byte offset where the parser stopped, and every
// floating-point number is correctly rounded from its own text (ExactNumbers).
#include "formats/json/json_file.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <limits>
#include <string>
#include <system_error>

#include <boost/json/basic_parser_impl.hpp>

#include "lwload/error.hpp"

namespace lwload::formats {
namespace {

namespace json = boost::json;

std::atomic<std::size_t> chunk_bytes{64 * 1024};

// A short rendering of an offending value for error messages (long arrays/strings are cut).
std::string describe(const json::value& v) {
  std::string text = json::serialize(v);
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
}

// Boost.JSON's own tree builder (a value_stack fed by basic_parser, as its stream_parser does),
// except for numbers with a fraction or exponent: Boost 1.81 converts those with an algorithm that
// is not correctly rounded (0.023198612531026206 becomes 0x1.7c1608888888ap-6, one ulp below
// 0x1.7c16088888889p-6), and a TFJS quantization scale must be the double tfjs computes, or
// dequantized weights differ. std::from_chars on the number's text is exact. Written by hand
// because Boost 1.81 has no precise-number option (parse_options::numbers came in 1.83).
struct ExactNumbers : JsonHandlerBasics {
  json::value_stack st;
  std::string number;  // a number's text received in parts (split across chunks)

  explicit ExactNumbers(json::storage_ptr sp) : st(std::move(sp)) {}

  bool on_document_begin(error_code&) { return true; }
  bool on_document_end(error_code&) { return true; }
  bool on_object_begin(error_code&) { return true; }
  bool on_object_end(std::size_t n, error_code&) { return st.push_object(n), true; }
  bool on_array_begin(error_code&) { return true; }
  bool on_array_end(std::size_t n, error_code&) { return st.push_array(n), true; }
  bool on_key_part(string_view s, std::size_t, error_code&) { return st.push_chars(s), true; }
  bool on_key(string_view s, std::size_t, error_code&) { return st.push_key(s), true; }
  bool on_string_part(string_view s, std::size_t, error_code&) { return st.push_chars(s), true; }
  bool on_string(string_view s, std::size_t, error_code&) { return st.push_string(s), true; }
  bool on_number_part(string_view s, error_code&) { return number.append(s.data(), s.size()), true; }
  bool on_int64(std::int64_t i, string_view, error_code&) {
    number.clear();
    return st.push_int64(i), true;
  }
  bool on_uint64(std::uint64_t u, string_view, error_code&) {
    number.clear();
    return st.push_uint64(u), true;
  }
  bool on_double(double approximate, string_view s, error_code&) {
    number.append(s.data(), s.size());
    double exact = approximate;
    const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), exact);
    number.clear();
    return st.push_double(ec == std::errc() ? exact : approximate), true;  // out of range: Boost's ±inf
  }
  bool on_bool(bool b, error_code&) { return st.push_bool(b), true; }
  bool on_null(error_code&) { return st.push_null(), true; }
  bool on_comment_part(string_view, error_code&) { return true; }
  bool on_comment(string_view, error_code&) { return true; }
};

// A handler that keeps no values: only the nesting, and the keys seen at the level that matters
// (depth 1 of an object, depth 2 inside the first element of an array): every one of at most 64
// bytes, the first 256 distinct ones, so one scan answers every reader's detection.
struct TopKeys : JsonHandlerBasics {
  static constexpr std::size_t kMaxKeys = 256;
  std::vector<std::string_view> wanted;  // always looked for, however many keys come before
  std::vector<bool> has;                 // one per wanted key
  bool array = false;
  std::vector<std::string> keys;  // distinct, in order of appearance: the first kMaxKeys
  bool all_keys = true;           // no key was left out (past kMaxKeys)
  std::size_t depth = 0;
  std::size_t root_elements = 0;  // values begun directly inside a top-level array
  bool in_first_element = false;  // inside element 0 of a top-level array, which is an object
  std::string key;                // the key being received, while it can still match
  bool key_too_long = false;

  bool counts(std::size_t key_depth) const { return array ? in_first_element && key_depth == 2 : key_depth == 1; }
  void begin_value() {
    if (array && depth == 1) ++root_elements;
  }
  bool open(bool is_array) {
    if (depth == 0) array = is_array;
    else begin_value();
    if (array && depth == 1 && root_elements == 1 && !is_array) in_first_element = true;
    ++depth;
    return true;
  }
  bool close() {
    --depth;
    if (depth == 1) in_first_element = false;
    return true;
  }
  bool on_document_begin(error_code&) { return true; }
  bool on_document_end(error_code&) { return true; }
  bool on_object_begin(error_code&) { return open(false); }
  bool on_object_end(std::size_t, error_code&) { return close(); }
  bool on_array_begin(error_code&) { return open(true); }
  bool on_array_end(std::size_t, error_code&) { return close(); }
  bool on_key_part(string_view s, std::size_t, error_code&) {
    if (!counts(depth) || key_too_long) return true;
    if (key.size() + s.size() > 64) key_too_long = true;
    else key.append(s.data(), s.size());
    return true;
  }
  bool on_key(string_view s, std::size_t, error_code& ec) {
    on_key_part(s, 0, ec);
    if (counts(depth) && !key_too_long) {
      for (std::size_t i = 0; i < wanted.size(); ++i)
        if (key == wanted[i]) has[i] = true;
      // Past kMaxKeys nothing more is kept, nor searched (a million keys cost no more than 256).
      if (keys.size() == kMaxKeys) all_keys = false;
      else if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
    }
    key.clear();
    key_too_long = false;
    return true;
  }
  bool on_string_part(string_view, std::size_t, error_code&) { return true; }
  bool on_string(string_view, std::size_t, error_code&) { return begin_value(), true; }
  bool on_number_part(string_view, error_code&) { return true; }
  bool on_int64(std::int64_t, string_view, error_code&) { return begin_value(), true; }
  bool on_uint64(std::uint64_t, string_view, error_code&) { return begin_value(), true; }
  bool on_double(double, string_view, error_code&) { return begin_value(), true; }
  bool on_bool(bool, error_code&) { return begin_value(), true; }
  bool on_null(error_code&) { return begin_value(), true; }
  bool on_comment_part(string_view, error_code&) { return true; }
  bool on_comment(string_view, error_code&) { return true; }
};

// Parses [begin, begin + length) of `file`. On a syntax error returns nullopt and sets
// *error_offset (absolute in the file) and *error_message; read errors propagate.
std::optional<json::value> parse_range(const RandomAccessFile& file, std::uint64_t begin, std::uint64_t length,
                                       std::uint64_t* error_offset, std::string* error_message) {
  json::parse_options options;
  options.max_depth = 64;
  json::basic_parser<ExactNumbers> parser(options, json::storage_ptr());
  parser.handler().st.reset(json::make_shared_resource<json::monotonic_resource>());
  if (!feed_json(parser, file, begin, length, error_offset, error_message)) return std::nullopt;
  return parser.handler().st.release();
}

}  // namespace

std::size_t json_chunk_bytes() noexcept { return chunk_bytes.load(std::memory_order_relaxed); }

void set_json_chunk_bytes(std::size_t bytes) noexcept {
  chunk_bytes.store(std::max<std::size_t>(bytes, 1), std::memory_order_relaxed);
}

json::value read_json(const RandomAccessFile& file, std::uint64_t begin, std::uint64_t length, std::string_view what) {
  std::uint64_t error_offset = 0;
  std::string message;
  auto value = parse_range(file, begin, length, &error_offset, &message);
  if (!value)
    fail(ErrorCode::bad_input, file.path().string(), ": ", what, ": malformed JSON at byte ", error_offset,
         " of the file: ", message);
  return std::move(*value);
}

std::optional<JsonTop> sniff_json_top(FileSystem& fs, const std::filesystem::path& path, std::uint64_t max_bytes,
                                      std::initializer_list<std::string_view> wanted) {
  const auto file = fs.open(path);
  const std::uint64_t size = file->size();
  if (size == 0 || size > max_bytes) return std::nullopt;
  // Cheap rejection before parsing: the first non-blank byte must open an object or array.
  std::array<char, 256> head;
  const std::size_t got =
      file->read_at(0, std::as_writable_bytes(std::span(head.data(), std::min<std::uint64_t>(head.size(), size))));
  std::size_t i = 0;
  while (i < got && (head[i] == ' ' || head[i] == '\t' || head[i] == '\n' || head[i] == '\r')) ++i;
  if (i == got || (head[i] != '{' && head[i] != '[')) return std::nullopt;
  // Detection asks of one file several times (each JSON reader its keys): the last file's scan is
  // kept, per thread, and answers while the file is the same and holds the answer. Only files with
  // an identity of their own (device and inode) are kept: an in-memory file has none.
  struct LastScan {
    std::string path;
    FileIdentity identity;
    std::optional<TopKeys> keys;  // nullopt: not valid JSON
  };
  thread_local LastScan last;
  const FileIdentity identity = file->identity();
  const auto answer = [&](const std::optional<TopKeys>& scan) -> std::optional<JsonTop> {
    if (!scan) return std::nullopt;
    JsonTop top;
    top.array = scan->array;
    for (const std::string_view w : wanted)
      top.has.push_back(std::find(scan->keys.begin(), scan->keys.end(), w) != scan->keys.end());
    return top;
  };
  const bool identified = identity.device != 0 || identity.inode != 0;
  if (identified && last.path == path.string() && last.identity == identity) {
    const std::optional<JsonTop> cached = answer(last.keys);
    const bool complete = !last.keys || last.keys->all_keys ||
                          std::all_of(cached->has.begin(), cached->has.end(), [](bool b) { return b; });
    if (complete) return cached;
  }
  json::parse_options options;
  options.max_depth = 64;
  json::basic_parser<TopKeys> parser(options);
  std::uint64_t error_offset = 0;
  std::string message;
  parser.handler().wanted.assign(wanted.begin(), wanted.end());
  parser.handler().has.assign(wanted.size(), false);
  std::optional<TopKeys> scan;
  if (feed_json(parser, *file, 0, size, &error_offset, &message)) {
    scan = std::move(parser.handler());
    scan->wanted.clear();  // views of this call's arguments
  }
  last = identified ? LastScan{path.string(), identity, scan} : LastScan{};
  if (!scan) return std::nullopt;
  return JsonTop{scan->array, scan->has};  // exact for `wanted`, whatever the number of keys
}

const json::object& as_object(const json::value& v, const std::filesystem::path& file, std::string_view where) {
  if (!v.is_object())
    fail(ErrorCode::bad_input, file.string(), ": ", where, ": expected a JSON object, found ", describe(v));
  return v.get_object();
}

const json::array& as_array(const json::value& v, const std::filesystem::path& file, std::string_view where) {
  if (!v.is_array())
    fail(ErrorCode::bad_input, file.string(), ": ", where, ": expected a JSON array, found ", describe(v));
  return v.get_array();
}

std::string_view as_string(const json::value& v, const std::filesystem::path& file, std::string_view where) {
  if (!v.is_string())
    fail(ErrorCode::bad_input, file.string(), ": ", where, ": expected a string, found ", describe(v));
  return v.get_string();
}

std::uint64_t as_u64(const json::value& v, const std::filesystem::path& file, std::string_view where) {
  if (v.is_uint64()) return v.get_uint64();
  if (v.is_int64() && v.get_int64() >= 0) return static_cast<std::uint64_t>(v.get_int64());
  fail(ErrorCode::bad_input, file.string(), ": ", where, ": expected a non-negative integer below 2^64, found ",
       describe(v));
}

double as_double(const json::value& v, const std::filesystem::path& file, std::string_view where) {
  if (v.is_double()) return v.get_double();
  if (v.is_int64()) return static_cast<double>(v.get_int64());
  if (v.is_uint64()) return static_cast<double>(v.get_uint64());
  fail(ErrorCode::bad_input, file.string(), ": ", where, ": expected a number, found ", describe(v));
}

const json::value& required(const json::object& obj, std::string_view key, const std::filesystem::path& file,
                            std::string_view where) {
  const json::value* v = obj.if_contains(key);
  if (!v) fail(ErrorCode::bad_input, file.string(), ": ", where, ": missing field '", key, "'");
  return *v;
}

Shape as_shape(const json::value& v, const std::filesystem::path& file, std::string_view where) {
  const json::array& dims = as_array(v, file, where);
  Shape shape;
  shape.reserve(dims.size());  // bounded by the JSON text already in memory
  for (const auto& d : dims) {
    const std::uint64_t dim = as_u64(d, file, where);
    if (dim > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      fail(ErrorCode::bad_input, file.string(), ": ", where, ": dimension ", dim, " is too large");
    shape.push_back(static_cast<std::int64_t>(dim));
  }
  return shape;
}

MetaValue to_meta_value(const json::value& v) {
  switch (v.kind()) {
    case json::kind::null: return MetaValue{};
    case json::kind::bool_: return MetaValue{v.get_bool()};
    case json::kind::int64: return MetaValue{v.get_int64()};
    case json::kind::uint64: return MetaValue{v.get_uint64()};
    case json::kind::double_: return MetaValue{v.get_double()};
    case json::kind::string: return MetaValue{std::string(v.get_string())};
    case json::kind::array: {
      MetaValue::Array items;
      items.reserve(v.get_array().size());
      for (const auto& item : v.get_array()) items.push_back(to_meta_value(item));
      return MetaValue{std::move(items)};
    }
    case json::kind::object: break;
  }
  return MetaValue{json::serialize(v)};
}

}  // namespace lwload::formats
