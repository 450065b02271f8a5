#include "io/contained_file_system.hpp"

#include "lwload/error.hpp"

namespace lwload::io {
namespace {

bool inside(const std::filesystem::path& path, const std::filesystem::path& folder) {
  auto p = path.begin();
  for (auto f = folder.begin(); f != folder.end(); ++f, ++p)
    if (p == path.end() || *p != *f) return false;
  return true;
}

}  // namespace

ContainedFileSystem::ContainedFileSystem(std::shared_ptr<FileSystem> target, const std::filesystem::path& model,
                                         bool allow_outside_links)
    : FileSystemWrapper(std::move(target)), model_(model), allow_outside_links_(allow_outside_links) {
  if (is_posix(this->target())) (void)absolute_path(model);  // a relative path needs the working folder: name `model`
  folder_lexical_ = this->target().is_directory(model) ? model : model.parent_path();
  if (folder_lexical_.empty()) folder_lexical_ = ".";
  folder_ = this->target().real_path(folder_lexical_);
  // The folder the user named is trusted as named (links in it followed); what it holds is not.
  if (is_posix(this->target())) folder_fd_ = FolderHandle(folder_lexical_);
}

void ContainedFileSystem::outside(const std::filesystem::path& path) {
  const std::filesystem::path real = target().real_path(path);
  if (inside(real, folder_))  // a detour: an absolute link, or a relative one through a folder outside
    fail(ErrorCode::bad_input, path.string(), ": resolves to ", real.string(),
         " only by way of an absolute link or a path outside the model folder ", folder_.string(),
         "; links inside the folder must be relative and stay in it (allow_outside_links / --allow-outside-links "
         "follows any link)");
  fail(ErrorCode::bad_input, path.string(), ": resolves to ", real.string(), ", outside the model folder ",
       folder_.string(), " (a link out of the folder; allow_outside_links / --allow-outside-links follows it)");
}

void ContainedFileSystem::check(const std::filesystem::path& path) {
  if (allow_outside_links_ || path == model_) return;
  if (inside(target().real_path(path), folder_)) return;
  outside(path);
}

std::filesystem::path ContainedFileSystem::relative(const std::filesystem::path& path) const {
  std::filesystem::path rel = path.lexically_relative(folder_lexical_);
  if (rel.empty()) {
    std::error_code ec;
    const auto a = std::filesystem::absolute(path, ec).lexically_normal();
    const auto b = std::filesystem::absolute(folder_lexical_, ec).lexically_normal();
    if (!ec) rel = a.lexically_relative(b);
  }
  return rel.is_absolute() ? std::filesystem::path() : rel;
}

EntryKind ContainedFileSystem::kind(const std::filesystem::path& path) {
  const std::filesystem::path rel = relative(path);
  if (rel.empty()) {
    if (!allow_outside_links_) outside(path);
    // Named outside the folder and allowed out: resolved from the folder as named.
    return stat_beneath(folder_fd_.fd(), absolute_path(path), true);
  }
  const EntryKind k = stat_beneath(folder_fd_.fd(), rel, allow_outside_links_);
  if (k == EntryKind::outside) outside(path);
  return k;
}

std::unique_ptr<RandomAccessFile> ContainedFileSystem::open(const std::filesystem::path& path, FileOpenFlags flags) {
  // What the user opened is opened as named (a hub snapshot's model file is itself a link out).
  if (path == model_ || folder_fd_.fd() < 0) {
    check(path);
    return FileSystemWrapper::open(path, flags);
  }
  std::filesystem::path rel = relative(path);
  if (rel.empty()) {
    if (!allow_outside_links_) outside(path);
    rel = absolute_path(path);  // openat ignores the folder for an absolute path
  }
  std::unique_ptr<RandomAccessFile> file = open_beneath(folder_fd_.fd(), rel, path, flags, allow_outside_links_);
  if (!file) outside(path);
  return file;
}

bool ContainedFileSystem::is_directory(const std::filesystem::path& path) {
  if (path == model_ || folder_fd_.fd() < 0) {
    if (!FileSystemWrapper::exists(path)) return false;
    check(path);
    return FileSystemWrapper::is_directory(path);
  }
  return kind(path) == EntryKind::directory;
}

bool ContainedFileSystem::exists(const std::filesystem::path& path) {
  if (path == model_ || folder_fd_.fd() < 0) {
    if (!FileSystemWrapper::exists(path)) return false;
    check(path);
    return true;
  }
  return kind(path) != EntryKind::absent;
}

}  // namespace lwload::io
