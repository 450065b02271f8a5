#include "lwload/memory_file_system.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

#include "io/memory_mapping.hpp"
#include "lwload/error.hpp"

namespace lwload {
namespace {

constexpr std::uint64_t kNever = std::numeric_limits<std::uint64_t>::max();

class MemoryFile final : public RandomAccessFile {
 public:
  MemoryFile(std::filesystem::path path, std::shared_ptr<const std::vector<std::byte>> bytes,
             std::shared_ptr<const std::atomic<std::uint64_t>> fail_from)
      : path_(std::move(path)), bytes_(std::move(bytes)), fail_from_(fail_from) {}

  const std::filesystem::path& path() const noexcept override { return path_; }
  std::uint64_t size() const override { return bytes_->size(); }
  int native_handle() const noexcept override { return -1; }

  std::shared_ptr<const FileMapping> do_map(std::uint64_t offset, std::uint64_t length, MapAccess) const override {
    if (failing()) return nullptr;  // a failing "disk" is read, so the failure shows
    // In-memory bytes need no mapping: the mapping borrows them and keeps them alive.
    return std::make_shared<io::MemoryMapping>(std::span(*bytes_).subspan(offset, length), bytes_);
  }

  std::size_t read_at(std::uint64_t offset, std::span<std::byte> dst) const override {
    if (offset >= bytes_->size() || dst.empty()) return 0;
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(dst.size(), bytes_->size() - offset));
    if (offset + n > fail_from_->load())
      fail(ErrorCode::io, path_.string(), ": read of ", n, " bytes at offset ", offset,
           ": input/output error (injected)");
    std::memcpy(dst.data(), bytes_->data() + offset, n);
    return n;
  }

 private:
  bool failing() const { return fail_from_->load() != kNever; }

  std::filesystem::path path_;
  std::shared_ptr<const std::vector<std::byte>> bytes_;
  std::shared_ptr<const std::atomic<std::uint64_t>> fail_from_;
};

}  // namespace

void MemoryFileSystem::add_file(const std::filesystem::path& path, std::vector<std::byte> bytes) {
  const std::lock_guard lock(mutex_);
  files_[path.lexically_normal()] = {std::make_shared<const std::vector<std::byte>>(std::move(bytes)),
                                     std::make_shared<std::atomic<std::uint64_t>>(kNever)};
}

void MemoryFileSystem::add_directory(const std::filesystem::path& path) {
  const std::lock_guard lock(mutex_);
  directories_.push_back(path.lexically_normal());
}

void MemoryFileSystem::fail_reads_from(const std::filesystem::path& path, std::uint64_t offset) {
  const std::lock_guard lock(mutex_);
  files_.at(path.lexically_normal()).fail_from->store(offset);
}

std::unique_ptr<RandomAccessFile> MemoryFileSystem::open(const std::filesystem::path& path, FileOpenFlags) {
  const std::lock_guard lock(mutex_);
  const auto it = files_.find(path.lexically_normal());
  if (it == files_.end()) fail(ErrorCode::io, path.string(), ": cannot open: No such file or directory");
  return std::make_unique<MemoryFile>(path, it->second.bytes, it->second.fail_from);
}

bool MemoryFileSystem::is_directory(const std::filesystem::path& path) {
  const std::lock_guard lock(mutex_);
  return std::find(directories_.begin(), directories_.end(), path.lexically_normal()) != directories_.end();
}

std::vector<std::filesystem::path> MemoryFileSystem::list(const std::filesystem::path& dir) {
  const std::lock_guard lock(mutex_);
  const auto folder = dir.lexically_normal();
  std::vector<std::filesystem::path> out;
  for (const auto& [path, entry] : files_)
    if (path.parent_path() == folder) out.push_back(path);
  return out;  // std::map: already sorted
}

bool MemoryFileSystem::exists(const std::filesystem::path& path) {
  const std::lock_guard lock(mutex_);
  const auto p = path.lexically_normal();
  return files_.contains(p) || std::find(directories_.begin(), directories_.end(), p) != directories_.end();
}

}  // namespace lwload
