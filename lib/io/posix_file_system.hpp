// The real file system's descriptor-relative opens, for io::ContainedFileSystem: a file a model names
// is opened relative to the model folder's descriptor, and the kernel resolves it with the
// containment rule applied as it goes (openat2 with RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS), so
// the check and the open are one step: a link swapped between a check and an open cannot exist.
// Where openat2 is missing (kernels before 5.6, or a seccomp filter that answers ENOSYS), the path
// is walked one component at a time with O_PATH | O_NOFOLLOW, each step checked with fstat, links
// read and their targets walked the same way, ".." taken from the walk's own stack of folders
// (never from the file system), so the walk cannot leave the folder either.
#pragma once

#include "io/layer.hpp"

#include <filesystem>
#include <memory>
#include <utility>

#include "lwload/file_system.hpp"

namespace lwload::io {

// True for a file system posix_file_system() made (the one whose files have descriptors).
bool is_posix(const FileSystem& fs) noexcept;

// std::filesystem::absolute, failing with Error(io) naming `path` where a relative path cannot be
// made absolute (the working folder deleted under the process), never with a std::filesystem_error.
std::filesystem::path absolute_path(const std::filesystem::path& path);

// A folder held open by descriptor (O_PATH): what the model's files are opened relative to.
class FolderHandle {
 public:
  FolderHandle() = default;
  explicit FolderHandle(const std::filesystem::path& folder);  // fd() < 0 when it cannot be opened
  ~FolderHandle();
  FolderHandle(FolderHandle&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  FolderHandle& operator=(FolderHandle&& other) noexcept {
    std::swap(fd_, other.fd_);
    return *this;
  }
  FolderHandle(const FolderHandle&) = delete;
  FolderHandle& operator=(const FolderHandle&) = delete;
  int fd() const noexcept { return fd_; }

 private:
  int fd_ = -1;
};

// `relative`, resolved from `folder` (links followed anywhere when `follow_outside`, otherwise never
// out of the folder), opened for reading as posix_file_system().open opens: anything but a regular
// file refused before a byte is read, `label` naming it in errors. nullptr when the path leaves the
// folder (and `follow_outside` is false); Error(io) when it cannot be opened.
std::unique_ptr<RandomAccessFile> open_beneath(int folder, const std::filesystem::path& relative,
                                               const std::filesystem::path& label, FileOpenFlags flags,
                                               bool follow_outside);

enum class EntryKind { absent, outside, regular, directory, other };

// What `relative` names, resolved as open_beneath resolves it.
EntryKind stat_beneath(int folder, const std::filesystem::path& relative, bool follow_outside);

// Test-only switch: resolve by the component walk even where the kernel has openat2 (the fallback
// then runs in every test that opens a model folder). Returns the previous setting.
bool force_component_walk(bool on) noexcept;

}  // namespace lwload::io
