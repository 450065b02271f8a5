// The real file system behind the FileSystem seam: open/fstat/pread/mmap, nothing buffered.
#include <algorithm>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "io/mmap_mapping.hpp"
#include "io/sources.hpp"
#include "lwload/error.hpp"
#include "lwload/file_system.hpp"

namespace lwload {

void RandomAccessFile::read_exact(std::uint64_t offset, std::span<std::byte> dst,
                                  std::string_view what) const {
  std::size_t done = 0;
  while (done < dst.size()) {
    const std::size_t got = read_at(offset + done, dst.subspan(done));
    if (got == 0)
      fail(ErrorCode::bad_input, path().string(), ": ", what, ": needs bytes [", offset, ", ",
           offset + dst.size(), ") but the file ends at ", offset + done);
    done += got;
  }
}

namespace {

class PosixFile final : public RandomAccessFile {
 public:
  PosixFile(std::filesystem::path path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixFile() override { ::close(fd_); }
  PosixFile(const PosixFile&) = delete;
  PosixFile& operator=(const PosixFile&) = delete;

  const std::filesystem::path& path() const noexcept override { return path_; }

  std::uint64_t size() const override {
    struct stat st {};
    if (::fstat(fd_, &st) != 0) fail(ErrorCode::io, path_.string(), ": fstat: ", std::strerror(errno));
    return static_cast<std::uint64_t>(st.st_size);
  }

  std::size_t read_at(std::uint64_t offset, std::span<std::byte> dst) const override {
    for (;;) {
      const ssize_t got = ::pread(fd_, dst.data(), dst.size(), static_cast<off_t>(offset));
      if (got >= 0) return static_cast<std::size_t>(got);
      if (errno == EINTR) continue;
      fail(ErrorCode::io, path_.string(), ": read of ", dst.size(), " bytes at offset ", offset,
           ": ", std::strerror(errno));
    }
  }

  int native_handle() const noexcept override { return fd_; }

  std::shared_ptr<const FileMapping> map(std::uint64_t offset, std::uint64_t length, MapAccess access) const override {
    return MmapMapping::map(*this, offset, length, access);
  }

  FileIdentity identity() const override {
    struct stat st {};
    if (::fstat(fd_, &st) != 0) fail(ErrorCode::io, path_.string(), ": fstat: ", std::strerror(errno));
    return FileIdentity{static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino),
                        static_cast<std::uint64_t>(st.st_size),
                        static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec};
  }

  // Through /proc/self/fd: the kernel opens the inode behind our descriptor again, whatever the
  // path names now (a file renamed over it, a link swapped in).
  std::unique_ptr<RandomAccessFile> reopen(FileOpenFlags flags) const override {
    int oflags = O_RDONLY | O_CLOEXEC;
    if (flags.direct_io) oflags |= O_DIRECT;
    const std::string self = "/proc/self/fd/" + std::to_string(fd_);
    const int fd = ::open(self.c_str(), oflags);
    if (fd < 0) fail(ErrorCode::io, path_.string(), ": cannot reopen (", self, "): ", std::strerror(errno));
    auto file = std::make_unique<PosixFile>(path_, fd);
    const FileIdentity mine = identity(), theirs = file->identity();
    if (mine.device != theirs.device || mine.inode != theirs.inode)
      fail(ErrorCode::io, path_.string(), ": reopening it through ", self, " gave another file");
    return file;
  }

 private:
  std::filesystem::path path_;
  int fd_;
};

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a regular file";
}

// Anything but a regular file (a FIFO, a device, a folder) is refused before a byte is read.
void refuse_unless_regular(int fd, const std::filesystem::path& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) fail(ErrorCode::io, path.string(), ": fstat: ", std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    fail(ErrorCode::bad_input, path.string(), ": is ", kind_of(st.st_mode), ", not a regular file; refusing to read it");
}

class PosixFileSystem final : public FileSystem {
 public:
  std::unique_ptr<RandomAccessFile> open(const std::filesystem::path& path,
                                         FileOpenFlags flags) override {
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever. Anything
    // but a regular file is refused before a byte is read; then reads block normally again.
    int oflags = O_RDONLY | O_CLOEXEC | O_NONBLOCK;
    if (flags.direct_io) oflags |= O_DIRECT;
    const int fd = ::open(path.c_str(), oflags);
    if (fd < 0) fail(ErrorCode::io, path.string(), ": cannot open: ", std::strerror(errno));
    auto file = std::make_unique<PosixFile>(path, fd);  // closes fd if a check below throws
    refuse_unless_regular(fd, path);
    if (::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0)
      fail(ErrorCode::io, path.string(), ": fcntl: ", std::strerror(errno));
    return file;
  }

  std::vector<std::filesystem::path> list(const std::filesystem::path& dir) override {
    std::vector<std::filesystem::path> out;
    std::error_code ec;
    for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
      out.push_back(it->path());
    std::sort(out.begin(), out.end());
    return out;
  }
  bool is_directory(const std::filesystem::path& path) override {
    std::error_code ec;
    return std::filesystem::is_directory(path, ec);
  }

  bool exists(const std::filesystem::path& path) override {
    std::error_code ec;
    return std::filesystem::exists(path, ec);
  }

  std::filesystem::path real_path(const std::filesystem::path& path) override {
    std::error_code ec;
    auto real = std::filesystem::weakly_canonical(std::filesystem::absolute(path, ec), ec);
    return ec ? std::filesystem::absolute(path).lexically_normal() : real;
  }
};

}  // namespace

std::shared_ptr<FileSystem> posix_file_system() { return std::make_shared<PosixFileSystem>(); }

std::unique_ptr<RandomAccessFile> io::duplicate_descriptor(int fd, const std::filesystem::path& label) {
  const int own = fd < 0 ? -1 : ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (own < 0) fail(ErrorCode::usage, label.string(), ": not an open file descriptor (", std::strerror(errno), ")");
  auto file = std::make_unique<PosixFile>(label, own);
  refuse_unless_regular(own, label);
  return file;
}

}  // namespace lwload
