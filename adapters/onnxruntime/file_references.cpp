// Where a weightless graph's references point (file_references.hpp).
#include "file_references.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <optional>

#include "lwload/error.hpp"

namespace lwload::onnxruntime {
namespace {

bool same_file(const struct stat& s, const FileIdentity& id) {
  return static_cast<std::uint64_t>(s.st_dev) == id.device && static_cast<std::uint64_t>(s.st_ino) == id.inode &&
         static_cast<std::uint64_t>(s.st_size) == id.size;
}

// The path of an open descriptor, when it still names the file opened (not deleted or replaced).
std::optional<std::filesystem::path> path_of(const OpenedFile& opened) {
  const int fd = opened.file ? opened.file->native_handle() : -1;
  if (fd < 0) return std::nullopt;
  std::error_code ec;
  const std::filesystem::path path = std::filesystem::read_symlink("/proc/self/fd/" + std::to_string(fd), ec);
  struct stat s {};
  if (ec || !path.is_absolute() || ::stat(path.c_str(), &s) != 0 || !S_ISREG(s.st_mode) ||
      !same_file(s, opened.identity))
    return std::nullopt;
  return path;
}

}  // namespace

FileReferences file_references(const Manifest& manifest) {
  FileReferences refs;
  refs.location.resize(manifest.files.size());
  const std::optional<std::filesystem::path> model =
      manifest.opened.empty() ? std::nullopt : path_of(manifest.opened[0]);
  if (!model) {
    refs.folder = "/proc/self";
    refs.in_memory = true;
    return refs;
  }
  refs.folder = model->parent_path().string();
  for (std::size_t i = 0; i < manifest.opened.size() && i < refs.location.size(); ++i) {
    const std::optional<std::filesystem::path> path = path_of(manifest.opened[i]);
    if (!path) continue;
    const std::filesystem::path relative = path->lexically_relative(model->parent_path());
    if (!relative.empty() && *relative.begin() != "..") refs.location[i] = relative.string();
  }
  return refs;
}

void check_unchanged(const FileReferences& refs, const Manifest& manifest) {
  for (std::size_t i = 0; i < refs.location.size() && i < manifest.opened.size(); ++i) {
    if (refs.location[i].empty()) continue;
    const std::filesystem::path path = std::filesystem::path(refs.folder) / refs.location[i];
    struct stat s {};
    if (::stat(path.c_str(), &s) != 0 || !same_file(s, manifest.opened[i].identity))
      fail(ErrorCode::io, path.string(), ": replaced while the ONNX Runtime session was being made (ONNX Runtime ",
           "reads some constants by path, lwload read the file it opened): open the model again");
  }
}

}  // namespace lwload::onnxruntime
