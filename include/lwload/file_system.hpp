// The one seam all file access goes through (LevelDB's Env idea): format readers, the loader and
// the benchmarks open files here, so tests can inject short reads, errors and replaced files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <vector>
#include <memory>
#include <span>
#include <string_view>
#include "lwload/export.h"

namespace lwload {

// How a mapping will be read: `random` turns off readahead, so reading a few header tables of a
// multi-GiB file does not pull its data pages into the page cache. `resident`: every page will be
// made resident next (FileMapping::make_resident, a zero-copy load that is not lazy); where the
// kernel cannot populate a range without copying it (no MADV_POPULATE_READ, before Linux 5.14),
// the mapping is populated as it is made (MAP_POPULATE), the cheapest way such a kernel has.
enum class MapAccess { normal, random, resident };

// A read-only view of a byte range of a file, valid while this object lives: what zero-copy
// placements hand to devices. Made by RandomAccessFile::map().
class LWLOAD_API FileMapping {
 public:
  virtual ~FileMapping() = default;
  virtual std::span<const std::byte> bytes() const noexcept = 0;
  // Asks the kernel to start reading bytes()[offset, +length) in the background (cold files).
  virtual void will_need(std::uint64_t /*offset*/, std::uint64_t /*length*/) const {}
  // Makes bytes()[offset, +length) resident (read from the file, mapped into the process) before
  // returning. Throws Error(io) naming the file when the pages cannot be read — a file truncated
  // after it was mapped — instead of faulting.
  virtual void make_resident(std::uint64_t offset, std::uint64_t length) const = 0;
  // How many bytes of bytes() are resident now.
  virtual std::uint64_t resident_bytes() const = 0;
};

// What makes a file the same file later: a replaced or rewritten file differs in one of these.
struct FileIdentity {
  std::uint64_t device = 0;
  std::uint64_t inode = 0;
  std::uint64_t size = 0;
  std::int64_t modified_ns = 0;
  // Status change time (ctime): moves with every write and cannot be set from user space, so a
  // file rewritten in place whose mtime was put back (touch -r) still differs here. It moves too
  // when the file's link count does (the file renamed over or deleted while open: its bytes are
  // the same), so a changed ctime counts only while the link count is what it was.
  std::int64_t changed_ns = 0;
  std::uint64_t links = 0;
  bool operator==(const FileIdentity& o) const noexcept {
    return device == o.device && inode == o.inode && size == o.size && modified_ns == o.modified_ns &&
           (changed_ns == o.changed_ns || links != o.links);
  }
};

struct FileOpenFlags {
  bool direct_io = false;  // O_DIRECT (cold loads); reads must then be aligned by the caller
};

class LWLOAD_API RandomAccessFile {
 public:
  virtual ~RandomAccessFile() = default;
  virtual const std::filesystem::path& path() const noexcept = 0;
  virtual std::uint64_t size() const = 0;
  // Reads up to dst.size() bytes at `offset`; returns the count, short only at end of file.
  // Throws Error(io) on an OS error.
  virtual std::size_t read_at(std::uint64_t offset, std::span<std::byte> dst) const = 0;
  // The POSIX descriptor for io_uring and fadvise, or -1 when the file has none (a test double);
  // callers then fall back to read_at.
  virtual int native_handle() const noexcept = 0;
  // A read-only view of [offset, offset + length), or nullptr when this file cannot be mapped
  // (the caller then reads instead). Throws Error(bad_input) naming the file, the range and size()
  // for a range past the end of the file (checked here, once for every file), Error(io) when
  // mapping fails.
  std::shared_ptr<const FileMapping> map(std::uint64_t offset, std::uint64_t length,
                                         MapAccess access = MapAccess::normal) const;
  // Device, inode, size, modification and status change times (test doubles: the size alone).
  virtual FileIdentity identity() const { return FileIdentity{0, 0, size(), 0, 0, 0}; }
  // This very file opened again with other flags (O_DIRECT), never by its path (which may name
  // another file by now); nullptr when this file cannot be (a test double), Error(io) when the
  // system refuses the flags.
  virtual std::unique_ptr<RandomAccessFile> reopen(FileOpenFlags /*flags*/) const { return nullptr; }

  // Reads exactly dst.size() bytes or throws Error(bad_input) naming the file, offset and what
  // was being read (`what`), e.g. "tensor 'w' data".
  void read_exact(std::uint64_t offset, std::span<std::byte> dst, std::string_view what) const;

 protected:
  // map() after its check: [offset, offset + length) lies inside size(). Optional: nullptr (the
  // default) when the file cannot be mapped.
  virtual std::shared_ptr<const FileMapping> do_map(std::uint64_t /*offset*/, std::uint64_t /*length*/,
                                                    MapAccess /*access*/) const {
    return nullptr;
  }
};

class LWLOAD_API FileSystem {
 public:
  virtual ~FileSystem() = default;
  // Throws Error(io) naming the path when the file cannot be opened.
  virtual std::unique_ptr<RandomAccessFile> open(const std::filesystem::path& path, FileOpenFlags flags = {}) = 0;
  virtual bool is_directory(const std::filesystem::path& path) = 0;
  virtual bool exists(const std::filesystem::path& path) = 0;
  // `path` with every symbolic link resolved (as far as it exists), for containment checks. A file
  // system without links returns it lexically normalised.
  virtual std::filesystem::path real_path(const std::filesystem::path& path) { return path.lexically_normal(); }
  // The entries directly inside folder `dir`, sorted (for readers that recognise a model by its
  // files' contents). A file system that cannot list returns none.
  virtual std::vector<std::filesystem::path> list(const std::filesystem::path& /*dir*/) { return {}; }
};

// Forwards every call to another file system (LevelDB's EnvWrapper): derive from it to change one
// behaviour — count opens, fail a read — of a real file system in a test.
class LWLOAD_API FileSystemWrapper : public FileSystem {
 public:
  explicit FileSystemWrapper(std::shared_ptr<FileSystem> target) : target_(std::move(target)) {}
  std::unique_ptr<RandomAccessFile> open(const std::filesystem::path& path, FileOpenFlags flags = {}) override {
    return target_->open(path, flags);
  }
  bool is_directory(const std::filesystem::path& path) override { return target_->is_directory(path); }
  bool exists(const std::filesystem::path& path) override { return target_->exists(path); }
  std::filesystem::path real_path(const std::filesystem::path& path) override { return target_->real_path(path); }
  std::vector<std::filesystem::path> list(const std::filesystem::path& dir) override { return target_->list(dir); }
  FileSystem& target() const noexcept { return *target_; }

 private:
  std::shared_ptr<FileSystem> target_;
};

// The real file system (pread, fstat, mmap). Stateless; each call returns a new instance.
LWLOAD_API std::shared_ptr<FileSystem> posix_file_system();

}  // namespace lwload
