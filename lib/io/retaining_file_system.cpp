#include "io/retaining_file_system.hpp"

namespace lwload::io {
namespace {

// One open file seen through several RandomAccessFile objects (each reader owns its own).
class SharedFile final : public RandomAccessFile {
 public:
  explicit SharedFile(std::shared_ptr<const RandomAccessFile> file) : file_(std::move(file)) {}
  const std::filesystem::path& path() const noexcept override { return file_->path(); }
  std::uint64_t size() const override { return file_->size(); }
  std::size_t read_at(std::uint64_t offset, std::span<std::byte> dst) const override {
    return file_->read_at(offset, dst);
  }
  int native_handle() const noexcept override { return file_->native_handle(); }
  std::shared_ptr<const FileMapping> map(std::uint64_t offset, std::uint64_t length, MapAccess access) const override {
    return file_->map(offset, length, access);
  }
  FileIdentity identity() const override { return file_->identity(); }
  std::unique_ptr<RandomAccessFile> reopen(FileOpenFlags flags) const override { return file_->reopen(flags); }

 private:
  std::shared_ptr<const RandomAccessFile> file_;
};

}  // namespace

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
