#include "io/retaining_file_system.hpp"

#include "io/shared_file.hpp"

namespace lwload::io {

std::unique_ptr<RandomAccessFile> RetainingFileSystem::open(const std::filesystem::path& path, FileOpenFlags flags) {
  if (flags.direct_io) return FileSystemWrapper::open(path, flags);
  return std::make_unique<SharedFile>(opened(path).file);
}

OpenedFile RetainingFileSystem::opened(const std::filesystem::path& path) {
  auto [slot, added] = files_.try_emplace(path.lexically_normal().string());
  if (added) {
    try {
      std::shared_ptr<const RandomAccessFile> file = FileSystemWrapper::open(path);
      slot->second = OpenedFile{file, file->identity()};
    } catch (...) {
      files_.erase(slot);
      throw;
    }
  }
  return slot->second;
}

}  // namespace lwload::io
