// Split GGUF (llama.cpp's gguf-split): a model published as NAME-00001-of-0000N.gguf ... each part a
// complete GGUF holding its share of the tensors and the keys split.no (0-based), split.count and
// split.tensors.count. Opening any part gives the whole model.
#pragma once

#include "formats/gguf/layer.hpp"

#include <filesystem>

#include "formats/format.hpp"
#include "lwload/file_system.hpp"
#include "lwload/manifest.hpp"

namespace lwload::formats {

// One GGUF file's manifest (tensors' pieces in file 0), split keys left in its metadata; its
// tensors count against `caps`.
Manifest read_gguf_file(FileSystem& fs, const std::filesystem::path& path, TensorCaps& caps);

// True when the manifest carries split.count (it is one part of a split model).
bool is_gguf_split(const Manifest& part);

// Reads every part of the split model `opened` belongs to and merges them: files in part order,
// each tensor's piece in its own part, metadata from the first part. Every part's header is checked
// against the opened one (split.count, split.tensors.count, general.architecture, its split.no);
// a missing part, a duplicate tensor or a tensor total that differs from split.tensors.count is
// Error(bad_input) naming the files.
// `caps` already counts the opened part's tensors; every other part's are added.
Manifest read_gguf_split(FileSystem& fs, const std::filesystem::path& opened, Manifest opened_manifest,
                         TensorCaps& caps);

}  // namespace lwload::formats
