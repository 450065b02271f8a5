// What open_manifest opened, kept: readers open files through this as through any file system, and
// each path is opened once — a later open of the same path (the sniffer, then the reader) shares
// the first — so the files a manifest names are the very files whose headers were read, handed to
// load() and verify() (Manifest::opened) instead of being opened again by path.
#pragma once

#include "io/layer.hpp"

#include <filesystem>
#include <memory>
#include <string>
#include <unordered_map>

#include "lwload/file_system.hpp"
#include "lwload/manifest.hpp"

namespace lwload::io {

class RetainingFileSystem final : public FileSystemWrapper {
 public:
  using FileSystemWrapper::FileSystemWrapper;

  std::unique_ptr<RandomAccessFile> open(const std::filesystem::path& path, FileOpenFlags flags = {}) override;

  // The file at `path` with its identity when first opened; opened now if no reader opened it.
  OpenedFile opened(const std::filesystem::path& path);

 private:
  std::unordered_map<std::string, OpenedFile> files_;  // by lexically normal path
};

}  // namespace lwload::io
