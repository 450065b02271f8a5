// One open file seen through several RandomAccessFile objects: the readers each own one, the
// manifest keeps the file itself (io::RetainingFileSystem, io::SingleFileSystem).
#pragma once

#include "io/layer.hpp"

#include <memory>

#include "lwload/file_system.hpp"

namespace lwload::io {

class SharedFile final : public RandomAccessFile {
 public:
  explicit SharedFile(std::shared_ptr<const RandomAccessFile> file) : file_(std::move(file)) {}
  const std::filesystem::path& path() const noexcept override { return file_->path(); }
  std::uint64_t size() const override { return file_->size(); }
  std::size_t read_at(std::uint64_t offset, std::span<std::byte> dst) const override {
    return file_->read_at(offset, dst);
  }
  int native_handle() const noexcept override { return file_->native_handle(); }
  FileIdentity identity() const override { return file_->identity(); }
  std::unique_ptr<RandomAccessFile> reopen(FileOpenFlags flags) const override { return file_->reopen(flags); }

 protected:
  std::shared_ptr<const FileMapping> do_map(std::uint64_t offset, std::uint64_t length,
                                            MapAccess access) const override {
    return file_->map(offset, length, access);
  }

 private:
  std::shared_ptr<const RandomAccessFile> file_;
};

}  // namespace lwload::io
