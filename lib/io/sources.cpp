#include "io/sources.hpp"

#include <algorithm>
#include <cstring>

#include "io/memory_mapping.hpp"
#include "io/shared_file.hpp"
#include "lwload/error.hpp"

namespace lwload::io {
namespace {

class WindowFile final : public RandomAccessFile {
 public:
  WindowFile(std::shared_ptr<const RandomAccessFile> file, std::uint64_t offset, std::uint64_t length,
             std::filesystem::path label)
      : file_(std::move(file)), offset_(offset), length_(length), label_(std::move(label)) {}

  const std::filesystem::path& path() const noexcept override { return label_; }
  std::uint64_t size() const override { return visible(file_->size()); }
  std::size_t read_at(std::uint64_t offset, std::span<std::byte> dst) const override {
    if (offset >= length_) return 0;
    return file_->read_at(offset_ + offset,
                          dst.first(static_cast<std::size_t>(std::min<std::uint64_t>(dst.size(), length_ - offset))));
  }
  // No descriptor: the engines would read it at the window's offsets. Reads go through read_at.
  int native_handle() const noexcept override { return -1; }
  std::shared_ptr<const FileMapping> do_map(std::uint64_t offset, std::uint64_t length,
                                            MapAccess access) const override {
    return file_->map(offset_ + offset, length, access);
  }
  FileIdentity identity() const override {
    FileIdentity id = file_->identity();
    id.size = visible(id.size);
    return id;
  }

 private:
  // The window's bytes that the file still holds (a truncated file shows as a shorter window).
  std::uint64_t visible(std::uint64_t file_size) const {
    return file_size <= offset_ ? 0 : std::min(length_, file_size - offset_);
  }

  std::shared_ptr<const RandomAccessFile> file_;
  std::uint64_t offset_, length_;
  std::filesystem::path label_;
};

class BorrowedFile final : public RandomAccessFile {
 public:
  BorrowedFile(std::span<const std::byte> bytes, std::filesystem::path label)
      : bytes_(bytes), label_(std::move(label)) {}
  const std::filesystem::path& path() const noexcept override { return label_; }
  std::uint64_t size() const override { return bytes_.size(); }
  std::size_t read_at(std::uint64_t offset, std::span<std::byte> dst) const override {
    if (offset >= bytes_.size() || dst.empty()) return 0;
    const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(dst.size(), bytes_.size() - offset));
    std::memcpy(dst.data(), bytes_.data() + offset, n);
    return n;
  }
  int native_handle() const noexcept override { return -1; }
  std::shared_ptr<const FileMapping> do_map(std::uint64_t offset, std::uint64_t length, MapAccess) const override {
    return std::make_shared<MemoryMapping>(bytes_.subspan(offset, length));
  }

 private:
  std::span<const std::byte> bytes_;
  std::filesystem::path label_;
};

}  // namespace

std::unique_ptr<RandomAccessFile> window(std::shared_ptr<const RandomAccessFile> file, std::uint64_t offset,
                                         std::uint64_t length, const std::filesystem::path& label) {
  const std::uint64_t size = file->size();
  if (offset > size || length > size - offset)
    fail(ErrorCode::bad_input, label.string(), ": bytes [", offset, ", +", length, ") are not inside the file's ", size,
         " bytes");
  return std::make_unique<WindowFile>(std::move(file), offset, length, label);
}

std::unique_ptr<RandomAccessFile> borrowed_memory(std::span<const std::byte> bytes,
                                                  const std::filesystem::path& label) {
  return std::make_unique<BorrowedFile>(bytes, label);
}

std::pair<std::shared_ptr<const RandomAccessFile>, Origin> open_range(const FileRange& range,
                                                                      const std::filesystem::path& label) {
  std::shared_ptr<const RandomAccessFile> container = duplicate_descriptor(range.fd, label);
  Origin origin{container, range.offset, container->identity()};
  return {window(std::move(container), range.offset, range.length, label), std::move(origin)};
}

SourceFileSystem::SourceFileSystem(std::shared_ptr<const RandomAccessFile> model, std::optional<Origin> origin,
                                   Resolve resolve)
    : model_(std::move(model)), resolve_(std::move(resolve)) {
  files_.emplace(model_->path().string(), Source{model_, std::move(origin)});
}

const SourceFileSystem::Source* SourceFileSystem::find(const std::filesystem::path& path) {
  const std::string name = path.string();
  if (const auto it = files_.find(name); it != files_.end()) return &it->second;
  if (!resolve_) return nullptr;
  const std::optional<FileRange> range = resolve_(path);
  if (!range) return nullptr;
  auto [file, origin] =
      open_range(*range, str(name, " (fd ", range->fd, " [", range->offset, ", +", range->length, "])"));
  return &files_.emplace(name, Source{std::move(file), std::move(origin)}).first->second;
}

std::unique_ptr<RandomAccessFile> SourceFileSystem::open(const std::filesystem::path& path, FileOpenFlags) {
  const Source* source = find(path);
  if (!source && !resolve_)
    fail(ErrorCode::unsupported, model_->path().string(), ": the model names another file, '", path.string(),
         "'; a model opened from a descriptor or from memory is one file unless OpenOptions::resolve finds the others");
  if (!source) fail(ErrorCode::io, path.string(), ": cannot open: the resolver found no such file");
  return std::make_unique<SharedFile>(source->file);
}

bool SourceFileSystem::exists(const std::filesystem::path& path) { return find(path) != nullptr; }

std::optional<Origin> SourceFileSystem::origin(const std::filesystem::path& path) const {
  const auto it = files_.find(path.string());
  return it == files_.end() ? std::nullopt : it->second.origin;
}

}  // namespace lwload::io
