// JSON headers read through the FileSystem seam (safetensors headers, safetensors index files,
// TFJS model.json / weights_manifest.json), plus the typed field accessors those readers share,
// so every malformed-JSON and wrong-field-type case has one message shape:
// "<file>: <field>: <problem> (<value>)".
#pragma once

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <optional>
#include <string_view>
#include <vector>

#include <boost/json.hpp>

#include "lwload/file_system.hpp"
#include "lwload/manifest.hpp"

namespace lwload::formats {

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

// Typed accessors: each fails with Error(bad_input) naming `file`, `where` (e.g. "tensor 'w'") and
// the field when the field is missing or has the wrong type or range.
const boost::json::object& as_object(const boost::json::value& v, const std::filesystem::path& file,
                                     std::string_view where);
const boost::json::array& as_array(const boost::json::value& v, const std::filesystem::path& file,
                                   std::string_view where);
std::string_view as_string(const boost::json::value& v, const std::filesystem::path& file,
                           std::string_view where);
std::uint64_t as_u64(const boost::json::value& v, const std::filesystem::path& file,
                     std::string_view where);
double as_double(const boost::json::value& v, const std::filesystem::path& file,
                 std::string_view where);

// obj[key], or Error(bad_input) "<file>: <where>: missing field '<key>'".
const boost::json::value& required(const boost::json::object& obj, std::string_view key,
                                   const std::filesystem::path& file, std::string_view where);

// A shape: an array of non-negative integers that fit int64.
std::vector<std::int64_t> as_shape(const boost::json::value& v, const std::filesystem::path& file,
                                   std::string_view where);

// A JSON value as model metadata (objects, which MetaValue cannot hold, become their JSON text).
MetaValue to_meta_value(const boost::json::value& v);

}  // namespace lwload::formats
