// Models that are not a path of their own: `length` bytes at `offset` of an open descriptor (an
// asset stored uncompressed inside an APK, a model appended to an executable), or bytes in the
// caller's memory (a model just downloaded). Each becomes one RandomAccessFile whose offsets start
// at the model's first byte, served to the readers by io::SingleFileSystem under a label that
// stands for the path in messages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>

#include "lwload/file_system.hpp"

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

// A file system holding one file, opened by its path(); any other name (a shard, external data) is
// Error(unsupported): a model from a descriptor or memory is one file.
class SingleFileSystem final : public FileSystem {
 public:
  explicit SingleFileSystem(std::shared_ptr<const RandomAccessFile> file) : file_(std::move(file)) {}
  std::unique_ptr<RandomAccessFile> open(const std::filesystem::path& path, FileOpenFlags flags = {}) override;
  bool is_directory(const std::filesystem::path& /*path*/) override { return false; }
  bool exists(const std::filesystem::path& path) override { return path == file_->path(); }

 private:
  std::shared_ptr<const RandomAccessFile> file_;
};

}  // namespace lwload::io
