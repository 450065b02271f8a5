// Large JSON manifests (TFJS model.json, whose modelTopology may run to tens of MB;
// model.safetensors.index.json) read without holding what the reader never looks at: the members
// of the top-level object that are not wanted are parsed as they stream by and dropped, and the
// tree of the rest lives in an arena whose size is capped, so a manifest costs bounded memory
// whatever its size.
#pragma once

#include "formats/layer.hpp"

#include <cstdint>
#include <initializer_list>
#include <string_view>

#include <boost/json.hpp>

#include "lwload/file_system.hpp"

namespace lwload::formats {

// Parses [begin, begin + length) of `file` as one JSON value. Of a top-level object only the
// members named in `keep` are kept; a top-level array (or scalar) is kept whole. Numbers are
// converted exactly as read_json converts them. Throws Error(bad_input) naming the file for
// malformed JSON, and when the kept tree would need more than `max_tree_bytes`.
boost::json::value read_json_members(const RandomAccessFile& file, std::uint64_t begin, std::uint64_t length,
                                     std::string_view what, std::initializer_list<std::string_view> keep,
                                     std::uint64_t max_tree_bytes);

}  // namespace lwload::formats
