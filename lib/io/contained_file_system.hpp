// The containment rule for model folders, in one place: every file a model names (shards, external
// data, TFJS shards, TFLite external buffer groups) must resolve — symlinks followed — to a real path
// inside the real path of the model's folder. open_manifest reads through this wrapper, so every
// reader, present and future, is held to it before it reads a byte: a link out of the folder
// (ONNX shipped that bug twice: CVE-2022-25882, CVE-2024-27318) is Error(bad_input) naming the
// link and its target. `allow_outside_links` is the explicit opt-in for folders whose files are
// links into a shared cache (the Hugging Face hub cache links snapshot files into ../../blobs).
#pragma once

#include <filesystem>
#include <memory>

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

  std::filesystem::path model_;
  std::filesystem::path folder_;  // the model folder's real path
  bool allow_outside_links_;
};

}  // namespace lwload::io
