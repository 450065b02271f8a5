// The containment rule for model folders, in one place: every file a model names (shards, external
// data, TFJS shards, TFLite external buffer groups) must lie — symlinks followed — inside the model's
// folder. open_manifest reads through this wrapper, so every reader, present and future, is held to
// it before it reads a byte: a link out of the folder (ONNX shipped that bug twice: CVE-2022-25882,
// CVE-2024-27318) is Error(bad_input) naming the link and its target. `allow_outside_links` is the
// explicit opt-in for folders whose files are links into a shared cache (the Hugging Face hub cache
// links snapshot files into ../../blobs).
//
// On the real file system the check and the open are one step: the folder is held open by
// descriptor and each named file is opened relative to it with the rule applied by the kernel as it
// resolves the path (io::open_beneath: openat2 RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS, or a
// component walk where openat2 is missing), so a link swapped in between a check and an open reads
// nothing from outside. With links allowed out, files are still opened relative to the folder's
// descriptor, links followed. Another FileSystem (a test double, a caller's own) has no descriptors:
// there the resolved path (FileSystem::real_path) is checked, then the file opened by path.
#pragma once

#include "io/layer.hpp"

#include <filesystem>
#include <memory>

#include "io/posix_file_system.hpp"
#include "lwload/file_system.hpp"

namespace lwload::io {

class ContainedFileSystem final : public FileSystemWrapper {
 public:
  // `model` is what the user opened: a file (its folder is the model folder) or a folder.
  ContainedFileSystem(std::shared_ptr<FileSystem> target, const std::filesystem::path& model, bool allow_outside_links);

  std::unique_ptr<RandomAccessFile> open(const std::filesystem::path& path, FileOpenFlags flags = {}) override;
  bool is_directory(const std::filesystem::path& path) override;
  bool exists(const std::filesystem::path& path) override;

 private:
  // Throws unless `path`, links resolved, lies inside the model folder (or links may leave it).
  void check(const std::filesystem::path& path);
  [[noreturn]] void outside(const std::filesystem::path& path);
  // `path` relative to the model folder, lexically (empty when it cannot be: then it is outside).
  std::filesystem::path relative(const std::filesystem::path& path) const;
  // What `path` names, resolved beneath the folder's descriptor; throws when it leaves the folder.
  EntryKind kind(const std::filesystem::path& path);

  std::filesystem::path model_;
  std::filesystem::path folder_lexical_;  // the model folder as the caller named it
  std::filesystem::path folder_;          // the model folder's real path (messages, other file systems)
  FolderHandle folder_fd_;                // the model folder, held open (real file system only)
  bool allow_outside_links_;
};

}  // namespace lwload::io
