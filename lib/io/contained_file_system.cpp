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
  const std::filesystem::path folder = this->target().is_directory(model) ? model : model.parent_path();
  folder_ = this->target().real_path(folder.empty() ? std::filesystem::path(".") : folder);
}

void ContainedFileSystem::check(const std::filesystem::path& path) {
  if (allow_outside_links_ || path == model_) return;
  const std::filesystem::path real = target().real_path(path);
  if (inside(real, folder_)) return;
  fail(ErrorCode::bad_input, path.string(), ": resolves to ", real.string(), ", outside the model folder ",
       folder_.string(), " (a link out of the folder; allow_outside_links / --allow-outside-links follows it)");
}

std::unique_ptr<RandomAccessFile> ContainedFileSystem::open(const std::filesystem::path& path, FileOpenFlags flags) {
  check(path);
  return FileSystemWrapper::open(path, flags);
}

bool ContainedFileSystem::is_directory(const std::filesystem::path& path) {
  if (!FileSystemWrapper::exists(path)) return false;
  check(path);
  return FileSystemWrapper::is_directory(path);
}

bool ContainedFileSystem::exists(const std::filesystem::path& path) {
  if (!FileSystemWrapper::exists(path)) return false;
  check(path);
  return true;
}

}  // namespace lwload::io
