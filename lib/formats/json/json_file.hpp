// JSON headers read through the FileSystem seam (safetensors headers, safetensors index files,
// TFJS model.json / weights_manifest.json), plus the typed field accessors those readers share,
// so every malformed-JSON and wrong-field-type case has one message shape:
// "<file>: <field>: <problem> (<value>)".
#pragma once

#include "formats/json/layer.hpp"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json.hpp>

#include "lwload/file_system.hpp"
#include "lwload/manifest.hpp"

namespace lwload::formats {

// What boost::json::basic_parser asks of every handler besides its callbacks: the size limits
// (Boost's own) and the types the callbacks take. The JSON readers' handlers derive from it.
struct JsonHandlerBasics {
  static constexpr std::size_t max_object_size = boost::json::object::max_size();
  static constexpr std::size_t max_array_size = boost::json::array::max_size();
  static constexpr std::size_t max_key_size = boost::json::string::max_size();
  static constexpr std::size_t max_string_size = boost::json::string::max_size();
  using error_code = boost::system::error_code;
  using string_view = boost::json::string_view;
};

// Parses bytes [begin, begin + length) of `file` as one JSON value. The parsed tree lives in a
// monotonic arena owned by the returned value, so memory stays proportional to the header.
// Throws Error(bad_input) "<file>: <what>: malformed JSON at byte N of the file: <Boost.JSON's message>".
boost::json::value read_json(const RandomAccessFile& file, std::uint64_t begin, std::uint64_t length,
                             std::string_view what);

// Detection helper: which of `wanted` are keys at the top of a JSON file — of its top-level object,
// or (array = true) of the first element of its top-level array when that is an object. Read with
// a streaming parser that builds no tree, so a large file that is not a model costs a scan, not
// its DOM. Nullopt when the file is larger than `max_bytes`, does not start (after white space)
// with '{' or '[', or is not valid JSON. Never throws for bad content; a failing read is still
// reported (Error(io)).
struct JsonTop {
  bool array = false;
  std::vector<bool> has;  // one per wanted key
};
std::optional<JsonTop> sniff_json_top(FileSystem& fs, const std::filesystem::path& path, std::uint64_t max_bytes,
                                      std::initializer_list<std::string_view> wanted);

// The size of the read chunks the streamed JSON readers (read_json, sniff_json_top, the
// safetensors header) feed to Boost.JSON's parser: 64 KiB. An internal parameter, settable so tests
// can put every kind of token across a chunk boundary; at least 1 byte.
std::size_t json_chunk_bytes() noexcept;
void set_json_chunk_bytes(std::size_t bytes) noexcept;

// Feeds bytes [begin, begin + length) of `file` to a json::basic_parser<Handler> in chunks of
// json_chunk_bytes(), then ends the text. On a syntax error returns false and sets *error_offset
// (absolute in the file: where the parser stopped) and *error_message; read errors and the
// handler's exceptions propagate. Trailing white space is accepted and anything else after the
// value is "extra data", as in json::stream_parser::write.
//
// The chunk buffer is one byte longer than any chunk it holds. Boost.JSON 1.81's basic_parser
// (Debian 12) marks "suspended or failed" by returning its own address (sentinel() is `this`),
// while a parse step that consumed its input returns the input's end. If that end pointer equals
// the parser's address (a buffer laid out just below the parser, as gcc -O0 lays out two locals),
// a key or value ending exactly at the chunk's end reads as "suspended inside it", and the next
// chunk is parsed as its continuation: valid text refused as a syntax error, or a failed assertion
// (fixed upstream in Boost 1.82, boostorg/json#814). A chunk's end inside the buffer is never the
// address of another object.
template <typename Parser>
bool feed_json(Parser& parser, const RandomAccessFile& file, std::uint64_t begin, std::uint64_t length,
               std::uint64_t* error_offset, std::string* error_message) {
  const std::size_t chunk_bytes = json_chunk_bytes();
  const std::unique_ptr<char[]> buffer(new char[chunk_bytes + 1]);
  std::uint64_t done = 0;
  boost::system::error_code ec;
  while (done < length) {
    const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(chunk_bytes, length - done));
    file.read_exact(begin + done, std::as_writable_bytes(std::span(buffer.get(), want)), "JSON text");
    const std::size_t used = parser.write_some(true, buffer.get(), want, ec);
    if (!ec && used < want) ec = boost::json::error::extra_data;
    if (ec) {
      *error_offset = begin + done + used;
      *error_message = ec.message();
      return false;
    }
    done += want;
  }
  parser.write_some(false, nullptr, 0, ec);
  if (ec) {
    *error_offset = begin + length;
    *error_message = ec.message();
    return false;
  }
  return true;
}

// Typed accessors: each fails with Error(bad_input) naming `file`, `where` (e.g. "tensor 'w'") and
// the field when the field is missing or has the wrong type or range.
const boost::json::object& as_object(const boost::json::value& v, const std::filesystem::path& file,
                                     std::string_view where);
const boost::json::array& as_array(const boost::json::value& v, const std::filesystem::path& file,
                                   std::string_view where);
std::string_view as_string(const boost::json::value& v, const std::filesystem::path& file, std::string_view where);
std::uint64_t as_u64(const boost::json::value& v, const std::filesystem::path& file, std::string_view where);
double as_double(const boost::json::value& v, const std::filesystem::path& file, std::string_view where);

// obj[key], or Error(bad_input) "<file>: <where>: missing field '<key>'".
const boost::json::value& required(const boost::json::object& obj, std::string_view key,
                                   const std::filesystem::path& file, std::string_view where);

// A shape: an array of non-negative integers that fit int64.
Shape as_shape(const boost::json::value& v, const std::filesystem::path& file, std::string_view where);

// A JSON value as model metadata (objects, which MetaValue cannot hold, become their JSON text).
MetaValue to_meta_value(const boost::json::value& v);

}  // namespace lwload::formats
