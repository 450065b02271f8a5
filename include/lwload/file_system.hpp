// The one seam all file access goes through (LevelDB's Env idea): format readers, the loader and
// the benchmarks open files here, so tests can inject short reads, errors and replaced files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string_view>

namespace lwload {

struct FileOpenFlags {
  bool direct_io = false;  // O_DIRECT (cold loads); reads must then be aligned by the caller
};

class RandomAccessFile {
 public:
  virtual ~RandomAccessFile() = default;
  virtual const std::filesystem::path& path() const noexcept = 0;
  virtual std::uint64_t size() const = 0;
  // Reads up to dst.size() bytes at `offset`; returns the count, short only at end of file.
  // Throws Error(io) on an OS error.
  virtual std::size_t read_at(std::uint64_t offset, std::span<std::byte> dst) const = 0;
  // The POSIX descriptor for mmap, io_uring and fadvise, or -1 when the file has none (a test
  // double); callers then fall back to read_at.
  virtual int native_handle() const noexcept = 0;

  // Reads exactly dst.size() bytes or throws Error(bad_input) naming the file, offset and what
  // was being read (`what`), e.g. "tensor 'w' data".
  void read_exact(std::uint64_t offset, std::span<std::byte> dst, std::string_view what) const;
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;
  // Throws Error(io) naming the path when the file cannot be opened.
  virtual std::unique_ptr<RandomAccessFile> open(const std::filesystem::path& path,
                                                 FileOpenFlags flags = {}) = 0;
  virtual bool is_directory(const std::filesystem::path& path) = 0;
  virtual bool exists(const std::filesystem::path& path) = 0;
};

// The real file system (pread, fstat). Stateless; each call returns a new instance.
std::shared_ptr<FileSystem> posix_file_system();

}  // namespace lwload
