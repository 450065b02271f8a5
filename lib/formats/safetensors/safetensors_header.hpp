// The JSON header of one safetensors file, parsed as a stream straight into manifest records.
#pragma once

#include "formats/safetensors/layer.hpp"

#include <cstdint>
#include <filesystem>

#include "formats/format.hpp"
#include "lwload/file_system.hpp"
#include "lwload/manifest.hpp"

namespace lwload::formats {

// Parses bytes [8, 8 + header_len) of `file` and appends one TensorInfo per tensor entry to
// manifest.tensors (in header order; the caller sorts and checks the tiling) and the
// `__metadata__` strings to manifest.metadata (keys already present are kept). Every entry is
// validated as it is parsed: dtype, shape, data_offsets inside the file, dtype × shape == length,
// and `caps` (tensor count, name bytes). Memory is the records plus one entry's JSON at a time.
void parse_safetensors_header(const RandomAccessFile& file, std::uint64_t header_len, std::uint32_t file_index,
                              Manifest& manifest, TensorCaps& caps);

}  // namespace lwload::formats
