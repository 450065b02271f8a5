// safetensors headers parsed as a stream, straight into manifest records.
//
// Why not a DOM: a header may list a million tensors in 80 MB of JSON, and a Boost.JSON DOM of it
// costs ~300 bytes per tensor on top of the records (2.2 s and 533 MB to inspect such a file).
// Boost.JSON's basic_parser (the SAX layer under its own DOM parser, so syntax errors and their
// byte offsets are exactly the DOM parser's) drives the handler below. It keeps the root object's
// current key and builds a DOM of *one* entry's value at a time, in an arena reset per entry; the
// entry is then validated with the typed accessors every JSON reader shares (same messages) and
// becomes a TensorInfo at once. Per tensor that leaves the record, its name, shape and piece.
#include "formats/safetensors/safetensors_header.hpp"

#include <boost/json.hpp>
#include <boost/json/basic_parser_impl.hpp>

#include <algorithm>
#include <array>
#include <limits>
#include <optional>
#include <string>
#include <unordered_set>

#include "formats/json/json_file.hpp"
#include "lwload/error.hpp"

namespace lwload::formats {
namespace {

namespace json = boost::json;

// The smallest valid tensor entry, `"":{"dtype":"U8","shape":[],"data_offsets":[0,1]},`, is 50
// bytes: the header length divided by 48 bounds how many tensors it can hold, so the records are
// reserved once (pages never written are never resident) instead of doubling with copies.
constexpr std::uint64_t kMinEntryBytes = 48;

// The safetensors dtype spellings (they are already lwload's canonical names). Newer sub-byte
// types (F4, F6_*, F8_E8M0) have no canonical dtype yet and are reported as unknown.
std::optional<DType> safetensors_dtype(std::string_view name) {
  static constexpr std::array<std::pair<std::string_view, DType>, 16> kTypes{{
      {"F64", DType::F64},
      {"F32", DType::F32},
      {"F16", DType::F16},
      {"BF16", DType::BF16},
      {"I64", DType::I64},
      {"I32", DType::I32},
      {"I16", DType::I16},
      {"I8", DType::I8},
      {"U64", DType::U64},
      {"U32", DType::U32},
      {"U16", DType::U16},
      {"U8", DType::U8},
      {"BOOL", DType::BOOL},
      {"F8_E4M3", DType::F8_E4M3},
      {"F8_E5M2", DType::F8_E5M2},
      {"C64", DType::C64},
  }};
  for (const auto& [spelling, type] : kTypes)
    if (spelling == name) return type;
  return std::nullopt;
}

class HeaderParser {
 public:
  HeaderParser(const RandomAccessFile& file, std::uint64_t header_len, std::uint32_t file_index, Manifest& manifest,
               TensorCaps& caps)
      : path_(file.path()),
        data_start_(8 + header_len),
        file_size_(file.size()),
        file_index_(file_index),
        manifest_(manifest),
        caps_(caps) {}

  // After the parse: a header whose root is not an object was captured whole; say what it is.
  void finish() {
    if (!whole_) return;
    const json::value root = stack_.release();
    as_object(root, path_, "header");
  }

  // basic_parser events. depth_ counts the open containers; an entry is the root object's key
  // (key_) and one value, captured in stack_ from its first event to its last.
  bool on_object_begin() {
    if (!root_seen_) {
      root_seen_ = true;
    } else if (at_entry()) {
      begin_value();
    }
    ++depth_;
    return true;
  }
  bool on_object_end(std::size_t n) {
    --depth_;
    if (depth_ == 0 && !whole_) return true;  // the root object
    stack_.push_object(n);
    if (at_entry()) end_value();
    return true;
  }
  bool on_array_begin() {
    begin_scalar_or_container();
    ++depth_;
    return true;
  }
  bool on_array_end(std::size_t n) {
    --depth_;
    stack_.push_array(n);
    if (at_entry()) end_value();
    return true;
  }
  // A tensor name is gathered in key_; a key inside a value goes to the value's stack (in parts,
  // then whole).
  bool on_key_part(std::string_view s) { return key(s, &json::value_stack::push_chars); }
  bool on_key(std::string_view s) { return key(s, &json::value_stack::push_key); }
  bool on_string_part(std::string_view s) {
    begin_scalar_or_container();
    stack_.push_chars(s);
    return true;
  }
  bool key(std::string_view s, void (json::value_stack::*push)(json::string_view)) {
    if (at_entry()) {
      key_.append(s);
    } else {
      (stack_.*push)(s);
    }
    return true;
  }
  template <typename Push>
  bool scalar(Push push) {
    begin_scalar_or_container();
    push(stack_);
    if (at_entry()) end_value();
    return true;
  }

 private:
  // Whether the parser is directly inside the root object (where keys are tensor names).
  bool at_entry() const noexcept { return depth_ == 1 && !whole_; }

  void begin_value() {
    if (in_value_) return;  // a string value arrives in parts
    stack_.reset(json::storage_ptr(&arena_));
    in_value_ = true;
  }
  void begin_scalar_or_container() {
    if (!root_seen_) {  // the root is not an object: capture it whole for the error message
      root_seen_ = whole_ = true;
      begin_value();
    } else if (at_entry()) {
      begin_value();
    }
  }
  void end_value() {
    {
      const json::value value = stack_.release();
      if (key_ == "__metadata__") add_metadata(value);
      else add_tensor(value);
    }
    in_value_ = false;
    key_.clear();
    arena_.release();
  }

  // Keys already present (an earlier shard's) keep their first value; hashed, as a header may
  // hold hundreds of thousands of keys.
  void add_metadata(const json::value& value) {
    if (metadata_keys_.empty())
      for (const MetaEntry& e : manifest_.metadata) metadata_keys_.insert(e.key);
    for (const auto& [meta_key, meta_value] : as_object(value, path_, "__metadata__")) {
      const std::string where = str("__metadata__ field '", std::string_view(meta_key), "'");
      std::string text(as_string(meta_value, path_, where));
      if (metadata_keys_.insert(std::string(meta_key)).second)
        manifest_.metadata.push_back(MetaEntry{std::string(meta_key), MetaValue{std::move(text)}});
    }
  }
  std::unordered_set<std::string> metadata_keys_;

  // `where_ + " field '<name>'"`, in a buffer reused across entries (no allocation per tensor).
  std::string_view field_where(std::string_view field) {
    field_where_.assign(where_).append(" field '").append(field).append("'");
    return field_where_;
  }

  void add_tensor(const json::value& value) {
    caps_.admit(path_, "header", key_);
    if (manifest_.tensors.size() == manifest_.tensors.capacity()) reserve_more();
    where_.assign("tensor '").append(key_).append("'");
    const json::object& obj = as_object(value, path_, where_);
    const std::string_view dtype_text = as_string(required(obj, "dtype", path_, where_), path_, field_where("dtype"));
    const auto dtype = safetensors_dtype(dtype_text);
    if (!dtype) fail(ErrorCode::bad_input, path_.string(), ": ", where_, ": unknown dtype '", dtype_text, "'");
    Shape shape = as_shape(required(obj, "shape", path_, where_), path_, field_where("shape"));

    const std::string_view offsets_where = field_where("data_offsets");
    const json::array& offsets = as_array(required(obj, "data_offsets", path_, where_), path_, offsets_where);
    if (offsets.size() != 2)
      fail(ErrorCode::bad_input, path_.string(), ": ", offsets_where, ": expected [begin, end], found ", offsets.size(),
           " values");
    const std::uint64_t begin = as_u64(offsets[0], path_, offsets_where);
    const std::uint64_t end = as_u64(offsets[1], path_, offsets_where);
    if (end < begin)
      fail(ErrorCode::bad_input, path_.string(), ": ", offsets_where, ": [", begin, ", ", end,
           "] ends before it begins");
    if (end > std::numeric_limits<std::uint64_t>::max() - data_start_)
      fail(ErrorCode::bad_input, path_.string(), ": ", offsets_where, ": [", begin, ", ", end, "] plus the data start ",
           data_start_, " overflows 64 bits");
    if (data_start_ + end > file_size_)  // the message is built only when it is needed
      check_extent(path_, str(offsets_where, " [", begin, ", ", end, "] from data start ", data_start_),
                   data_start_ + begin, end - begin, file_size_);
    check_tensor_length(path_, key_, *dtype, shape, end - begin);

    // std::string(key_), not an assignment: a copy is allocated at the name's size.
    manifest_.tensors.push_back(TensorInfo{std::string(key_),
                                           *dtype,
                                           Encoding::raw,
                                           std::move(shape),
                                           end - begin,
                                           {Piece{file_index_, data_start_ + begin, end - begin}},
                                           nullptr});
  }

  // Room for every tensor the rest of the header could hold, at once (see kMinEntryBytes).
  void reserve_more() {
    auto& tensors = manifest_.tensors;
    const std::uint64_t header_bound = (data_start_ - 8) / kMinEntryBytes + 1;
    const std::uint64_t cap_left = caps_.limits().max_tensors - caps_.tensors() + 1;
    const std::uint64_t more = std::max<std::uint64_t>(1, std::min(header_bound, cap_left));
    tensors.reserve(tensors.size() + static_cast<std::size_t>(std::max<std::uint64_t>(more, tensors.size() / 2)));
  }

  const std::filesystem::path& path_;
  const std::uint64_t data_start_;
  const std::uint64_t file_size_;
  const std::uint32_t file_index_;
  Manifest& manifest_;
  TensorCaps& caps_;

  int depth_ = 0;
  bool root_seen_ = false;
  bool whole_ = false;     // the root is not an object: everything goes to stack_
  bool in_value_ = false;  // stack_ holds the current entry's value so far
  std::string key_;        // the current entry's key (tensor name)
  std::string where_;
  std::string field_where_;

  alignas(std::max_align_t) unsigned char arena_buffer_[4096];
  json::monotonic_resource arena_{arena_buffer_, sizeof arena_buffer_};
  json::value_stack stack_;
};

// The handler basic_parser calls; it forwards to HeaderParser (which is not copyable and holds
// the reader's state). Exceptions thrown by HeaderParser propagate out of write_some().
struct Handler {
  static constexpr std::size_t max_object_size = std::numeric_limits<std::size_t>::max();
  static constexpr std::size_t max_array_size = std::numeric_limits<std::size_t>::max();
  static constexpr std::size_t max_key_size = std::numeric_limits<std::size_t>::max();
  static constexpr std::size_t max_string_size = std::numeric_limits<std::size_t>::max();

  explicit Handler(HeaderParser& p) : parser(p) {}
  HeaderParser& parser;

  bool on_document_begin(json::error_code&) { return true; }
  bool on_document_end(json::error_code&) { return true; }
  bool on_object_begin(json::error_code&) { return parser.on_object_begin(); }
  bool on_object_end(std::size_t n, json::error_code&) { return parser.on_object_end(n); }
  bool on_array_begin(json::error_code&) { return parser.on_array_begin(); }
  bool on_array_end(std::size_t n, json::error_code&) { return parser.on_array_end(n); }
  bool on_key_part(json::string_view s, std::size_t, json::error_code&) { return parser.on_key_part(s); }
  bool on_key(json::string_view s, std::size_t, json::error_code&) { return parser.on_key(s); }
  bool on_string_part(json::string_view s, std::size_t, json::error_code&) { return parser.on_string_part(s); }
  bool on_string(json::string_view s, std::size_t, json::error_code&) {
    return parser.scalar([s](json::value_stack& st) { st.push_string(s); });
  }
  bool on_number_part(json::string_view, json::error_code&) { return true; }
  bool on_int64(std::int64_t i, json::string_view, json::error_code&) {
    return parser.scalar([i](json::value_stack& st) { st.push_int64(i); });
  }
  bool on_uint64(std::uint64_t u, json::string_view, json::error_code&) {
    return parser.scalar([u](json::value_stack& st) { st.push_uint64(u); });
  }
  bool on_double(double d, json::string_view, json::error_code&) {
    return parser.scalar([d](json::value_stack& st) { st.push_double(d); });
  }
  bool on_bool(bool b, json::error_code&) {
    return parser.scalar([b](json::value_stack& st) { st.push_bool(b); });
  }
  bool on_null(json::error_code&) {
    return parser.scalar([](json::value_stack& st) { st.push_null(); });
  }
  bool on_comment_part(json::string_view, json::error_code&) { return true; }
  bool on_comment(json::string_view, json::error_code&) { return true; }
};

}  // namespace

void parse_safetensors_header(const RandomAccessFile& file, std::uint64_t header_len, std::uint32_t file_index,
                              Manifest& manifest, TensorCaps& caps) {
  HeaderParser state(file, header_len, file_index, manifest, caps);
  json::parse_options options;
  options.max_depth = 64;
  json::basic_parser<Handler> parser(options, state);
  std::uint64_t error_offset = 0;
  std::string message;
  if (!feed_json(parser, file, 8, header_len, &error_offset, &message))
    fail(ErrorCode::bad_input, file.path().string(), ": header: malformed JSON at byte ", error_offset,
         " of the file: ", message);
  state.finish();
}

}  // namespace lwload::formats
