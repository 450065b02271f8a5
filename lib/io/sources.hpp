// Models that are not a path of their own: `length` bytes at `offset` of an open descriptor (an
// asset stored uncompressed inside an APK, a model appended to an executable), or bytes in the
// caller's memory (a model just downloaded). Each becomes one RandomAccessFile whose offsets start
// at the model's first byte, served to the readers by io::SingleFileSystem under a label that
// stands for the path in messages.
#pragma once

#include "io/layer.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <memory>
#include <span>

#include "lwload/file_system.hpp"
#include "lwload/manifest.hpp"

namespace lwload::io {

// A duplicate of `fd` (the caller may close its own); Error(bad_input) unless it is a regular file.
std::unique_ptr<RandomAccessFile> duplicate_descriptor(int fd, const std::filesystem::path& label);

// Bytes [offset, offset + length) of `file` as a file of their own: nothing outside them is read,
// mapped for a tensor or counted in its size. Error(bad_input) when they are not inside `file`.
std::unique_ptr<RandomAccessFile> window(std::shared_ptr<const RandomAccessFile> file, std::uint64_t offset,
                                         std::uint64_t length, const std::filesystem::path& label);

// The caller's bytes, borrowed: reads copy from them, mappings point into them (zero-copy), and
// they must outlive every mapping and Weights made from them.
std::unique_ptr<RandomAccessFile> borrowed_memory(std::span<const std::byte> bytes, const std::filesystem::path& label);

// Where a file served by SourceFileSystem lives: bytes [offset, ...) of `container`, an open file
// whose identity was taken when it was first seen.
struct Origin {
  std::shared_ptr<const RandomAccessFile> container;
  std::uint64_t offset = 0;
  FileIdentity identity;
};

// The files of a model that is not a path: the model itself, opened by its path() (its label),
// and every other name it gives (a shard, external data) as `resolve` finds it — a descriptor and
// a byte range, duplicated and windowed like the model's own. Without `resolve`, or when it finds
// nothing, another name is Error(unsupported) / Error(io).
class SourceFileSystem final : public FileSystem {
 public:
  using Resolve = std::function<std::optional<FileRange>(const std::filesystem::path&)>;
  // `origin`: where the model's bytes lie (nullopt: in memory, nowhere else).
  SourceFileSystem(std::shared_ptr<const RandomAccessFile> model, std::optional<Origin> origin, Resolve resolve);

  std::unique_ptr<RandomAccessFile> open(const std::filesystem::path& path, FileOpenFlags flags = {}) override;
  bool is_directory(const std::filesystem::path& /*path*/) override { return false; }
  bool exists(const std::filesystem::path& path) override;

  const std::filesystem::path& model_path() const noexcept { return model_->path(); }
  // Where the file served as `path` lives; nullopt for memory or a name never opened.
  std::optional<Origin> origin(const std::filesystem::path& path) const;

 private:
  struct Source {
    std::shared_ptr<const RandomAccessFile> file;  // what the readers see: offsets from 0
    std::optional<Origin> origin;
  };
  const Source* find(const std::filesystem::path& path);

  std::shared_ptr<const RandomAccessFile> model_;
  Resolve resolve_;
  std::map<std::string, Source> files_;  // the model and every resolved name, by name
};

// A descriptor range as a file of its own (duplicated, windowed) and where it lies.
std::pair<std::shared_ptr<const RandomAccessFile>, Origin> open_range(const FileRange& range,
                                                                      const std::filesystem::path& label);

}  // namespace lwload::io
