// What every format reader provides, and the checks they share: the formats base, below the wings.
// One reader per wing (lib/formats/<format>/, its <format>.hpp declares it); registry/registry.cpp
// lists them in detection order. Readers know nothing of devices.
#pragma once

#include "formats/layer.hpp"

#include <cstdint>
#include <filesystem>
#include <span>
#include <string_view>

#include "lwload/dtype.hpp"
#include "lwload/file_system.hpp"
#include "lwload/manifest.hpp"

namespace lwload::formats {

// Dimensions a tensor may have: far beyond any real tensor (GGUF allows 4, TFLite kernels 6). A
// format that lets many tensors share one shape record (TFLite vectors, pickle memo) would
// otherwise copy a huge shared shape into every tensor.
inline constexpr std::size_t kMaxRank = 64;

// Caps on what a model's headers may ask for, over the whole manifest (every shard or split part
// together): OpenOptions::max_tensors and max_name_bytes.
struct HeaderLimits {
  std::uint64_t max_tensors = OpenOptions{}.max_tensors;
  std::uint64_t max_name_bytes = OpenOptions{}.max_name_bytes;
};

// What detection sees: the path, whether it is a folder, and the first bytes of the file.
struct ModelSource {
  FileSystem& fs;
  std::filesystem::path path;
  bool is_directory = false;
  std::span<const std::byte> head;  // up to 64 bytes; empty for a folder
  HeaderLimits limits{};
  bool densify = false;  // OpenOptions::densify: sparse tensors are described dense (Encoding::sparse)
};

// Fills `head` with the first bytes of the file at `path` (ModelSource::head's bytes); returns how
// many there were (fewer than head.size() only for a shorter file).
std::size_t read_head(FileSystem& fs, const std::filesystem::path& path, std::span<std::byte> head);

// Counts the tensors a reader admits into one manifest and the bytes of their names, and fails
// past either cap with Error(bad_input) naming the file, the field and the tensor. A header's
// text is bounded by each reader, but a record is several times its text (and shards multiply),
// so readers call admit() before storing each tensor and check_declared() on any count a header
// announces before they allocate for it.
class TensorCaps {
 public:
  explicit TensorCaps(const HeaderLimits& limits) noexcept : limits_(limits) {}

  void admit(const std::filesystem::path& file, std::string_view field, std::string_view name) {
    if (tensors_ >= limits_.max_tensors) too_many(file, field, name);
    if (name.size() > limits_.max_name_bytes - name_bytes_) names_too_long(file, field, name);
    ++tensors_;
    name_bytes_ += name.size();
  }
  // `count` more tensors announced by `field` (GGUF's tensor_count, an index's weight_map).
  void check_declared(const std::filesystem::path& file, std::string_view field, std::uint64_t count) const;

  const HeaderLimits& limits() const noexcept { return limits_; }
  std::uint64_t tensors() const noexcept { return tensors_; }
  std::uint64_t name_bytes() const noexcept { return name_bytes_; }

 private:
  [[noreturn]] void too_many(const std::filesystem::path& file, std::string_view field, std::string_view name) const;
  [[noreturn]] void names_too_long(const std::filesystem::path& file, std::string_view field,
                                   std::string_view name) const;

  HeaderLimits limits_;
  std::uint64_t tensors_ = 0;
  std::uint64_t name_bytes_ = 0;
};

struct FormatReader {
  std::string_view name;
  // True when `source` is this format (content first; the extension only breaks ties).
  bool (*detect)(const ModelSource& source);
  // Reads headers only. Throws Error(bad_input) naming file, tensor, field and value.
  Manifest (*read)(const ModelSource& source);
};

// offset + length, or Error(bad_input) "<file>: <what>: offset O + length L overflows 64 bits".
std::uint64_t checked_end(const std::filesystem::path& file, std::string_view what, std::uint64_t offset,
                          std::uint64_t length);

// Fails unless [offset, offset + length) lies inside a file of `file_size` bytes.
void check_extent(const std::filesystem::path& file, std::string_view what, std::uint64_t offset, std::uint64_t length,
                  std::uint64_t file_size);

// Bytes of a dtype × shape tensor, or Error(bad_input) naming the tensor (overflow, negative
// dimension, not a whole number of blocks, STRING).
std::uint64_t tensor_bytes(const std::filesystem::path& file, std::string_view tensor, DType dtype,
                           std::span<const std::int64_t> shape);

// Fails unless the tensor's stored length equals dtype × shape.
void check_tensor_length(const std::filesystem::path& file, std::string_view tensor, DType dtype,
                         std::span<const std::int64_t> shape, std::uint64_t length);

// Resolves a path a model file names (ONNX external `location`, TFJS shard, safetensors shard)
// against the model's folder; fails when it is absolute or escapes the folder.
std::filesystem::path resolve_inside(const std::filesystem::path& model_dir, std::string_view relative,
                                     const std::filesystem::path& file, std::string_view what);

// The first tensor whose name an earlier one in `tensors` already has, or nullptr. An
// open-addressing table of indices: 8 bytes per tensor, where a std::unordered_set of names
// costs ~56.
const TensorInfo* find_duplicate_name(std::span<const TensorInfo> tensors);

// Index of `path` in manifest.files, appending it when new.
std::uint32_t file_index(Manifest& manifest, const std::filesystem::path& path);

}  // namespace lwload::formats
