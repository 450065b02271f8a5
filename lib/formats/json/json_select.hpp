// Large JSON manifests (TFJS model.json, whose modelTopology may run to tens of MB;
// model.safetensors.index.json) read without holding what the reader never looks at: the members
// of the top-level object that are not wanted are parsed as they stream by and dropped, the long
// lists the reader walks item by item (a TFJS group's weights, an index's weight_map) are handed
// over an item at a time, and the tree of the rest lives in an arena whose size is capped, so a
// manifest costs bounded memory whatever its size.
#pragma once

#include "formats/json/layer.hpp"

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string_view>

#include <boost/json.hpp>

#include "lwload/file_system.hpp"

namespace lwload::formats {

// A container of the kept tree whose items are handed over one at a time and never kept, so a
// manifest listing a million weights costs one weight's tree at a time: the value of member `key`
// in the objects ("holders") at depth `holder_depth` of the document (1: the top-level object; 3:
// a TFJS group in model.json's weightsManifest array) — inside top-level member `within` when the
// document is an object and `within` is not empty. Each item is an array element, or an object
// member with its key. The container stays in the tree, empty. A holder with `key` twice is
// refused as ambiguous.
struct StreamedItems {
  std::string_view within;
  std::size_t holder_depth_in_object = 0;  // when the document is an object (0: nothing streamed)
  std::size_t holder_depth_in_array = 0;   // when it is an array
  std::string_view key;
  // holder: the holder's position among the values at its level (its index in the array listing
  // it; 0 for the top-level object); key: an object member's key, else empty.
  std::function<void(std::size_t holder, std::string_view key, boost::json::value&& item)> each;
};

// Parses [begin, begin + length) of `file` as one JSON value. Of a top-level object only the
// members named in `keep` are kept; a top-level array (or scalar) is kept whole; `streamed` items
// are handed to its callback instead. Numbers are converted exactly as read_json converts them.
// Throws Error(bad_input) naming the file for malformed JSON, and when the kept tree (or one
// streamed item) would need more than `max_tree_bytes`.
boost::json::value read_json_members(const RandomAccessFile& file, std::uint64_t begin, std::uint64_t length,
                                     std::string_view what, std::initializer_list<std::string_view> keep,
                                     std::uint64_t max_tree_bytes, const StreamedItems* streamed = nullptr);

}  // namespace lwload::formats
