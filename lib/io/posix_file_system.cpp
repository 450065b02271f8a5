// The real file system behind the FileSystem seam: open/fstat/pread/mmap, nothing buffered.
#include <algorithm>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <deque>
#include <string>

#include "io/mmap_mapping.hpp"
#include "io/posix_file_system.hpp"
#include "io/sources.hpp"
#include "lwload/error.hpp"
#include "lwload/file_system.hpp"

namespace lwload {

std::shared_ptr<const FileMapping> RandomAccessFile::map(std::uint64_t offset, std::uint64_t length,
                                                         MapAccess access) const {
  const std::uint64_t size = this->size();
  if (offset > size || length > size - offset)
    fail(ErrorCode::bad_input, path().string(), ": mapping [", offset, ", +", length,
         ") extends past the end of the file (", size, " bytes)");
  return do_map(offset, length, access);
}

void RandomAccessFile::read_exact(std::uint64_t offset, std::span<std::byte> dst, std::string_view what) const {
  std::size_t done = 0;
  while (done < dst.size()) {
    const std::size_t got = read_at(offset + done, dst.subspan(done));
    if (got == 0)
      fail(ErrorCode::bad_input, path().string(), ": ", what, ": needs bytes [", offset, ", ", offset + dst.size(),
           ") but the file ends at ", offset + done);
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
      fail(ErrorCode::io, path_.string(), ": read of ", dst.size(), " bytes at offset ", offset, ": ",
           std::strerror(errno));
    }
  }

  int native_handle() const noexcept override { return fd_; }

  std::shared_ptr<const FileMapping> do_map(std::uint64_t offset, std::uint64_t length,
                                            MapAccess access) const override {
    return MmapMapping::map(*this, offset, length, access);
  }

  FileIdentity identity() const override {
    struct stat st {};
    if (::fstat(fd_, &st) != 0) fail(ErrorCode::io, path_.string(), ": fstat: ", std::strerror(errno));
    // ctime too: an in-place rewrite that puts the old mtime back (touch -r) still moves it, and
    // user space cannot set it. (The kernel's change cookie, STATX_CHANGE_COOKIE, is not exported
    // to user space by statx; ctime to the nanosecond is what a reader can see.)
    return FileIdentity{static_cast<std::uint64_t>(st.st_dev),
                        static_cast<std::uint64_t>(st.st_ino),
                        static_cast<std::uint64_t>(st.st_size),
                        static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec,
                        static_cast<std::int64_t>(st.st_ctim.tv_sec) * 1'000'000'000 + st.st_ctim.tv_nsec,
                        static_cast<std::uint64_t>(st.st_nlink)};
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
    fail(ErrorCode::bad_input, path.string(), ": is ", kind_of(st.st_mode),
         ", not a regular file; refusing to read it");
}

// O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever. Anything but a
// regular file is refused before a byte is read; then reads block normally again.
int read_flags(FileOpenFlags flags) {
  int oflags = O_RDONLY | O_CLOEXEC | O_NONBLOCK;
  if (flags.direct_io) oflags |= O_DIRECT;
  return oflags;
}

std::unique_ptr<RandomAccessFile> adopt(int fd, const std::filesystem::path& path) {
  auto file = std::make_unique<PosixFile>(path, fd);  // closes fd if a check below throws
  refuse_unless_regular(fd, path);
  if (::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0)
    fail(ErrorCode::io, path.string(), ": fcntl: ", std::strerror(errno));
  return file;
}

class PosixFileSystem final : public FileSystem {
 public:
  std::unique_ptr<RandomAccessFile> open(const std::filesystem::path& path, FileOpenFlags flags) override {
    const int fd = ::open(path.c_str(), read_flags(flags));
    if (fd < 0) fail(ErrorCode::io, path.string(), ": cannot open: ", std::strerror(errno));
    return adopt(fd, path);
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
    const std::filesystem::path absolute = io::absolute_path(path);
    std::error_code ec;
    auto real = std::filesystem::weakly_canonical(absolute, ec);
    return ec ? absolute.lexically_normal() : real;
  }
};

}  // namespace

std::shared_ptr<FileSystem> posix_file_system() { return std::make_shared<PosixFileSystem>(); }

std::filesystem::path io::absolute_path(const std::filesystem::path& path) {
  std::error_code ec;
  std::filesystem::path absolute = std::filesystem::absolute(path, ec);
  if (ec)
    fail(ErrorCode::io, path.string(), ": cannot be resolved against the working folder (", ec.message(),
         "; was the folder deleted?)");
  return absolute;
}

std::unique_ptr<RandomAccessFile> io::duplicate_descriptor(int fd, const std::filesystem::path& label) {
  const int own = fd < 0 ? -1 : ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (own < 0) fail(ErrorCode::usage, label.string(), ": not an open file descriptor (", std::strerror(errno), ")");
  auto file = std::make_unique<PosixFile>(label, own);
  refuse_unless_regular(own, label);
  return file;
}

// ---- Opening beneath a folder's descriptor ----

namespace io {
namespace {

std::atomic<bool> walk_forced{false};
std::atomic<bool> no_openat2{false};  // the kernel (or a seccomp filter) said ENOSYS once

struct Fd {
  int fd = -1;
  Fd() = default;
  explicit Fd(int f) : fd(f) {}
  Fd(Fd&& o) noexcept : fd(o.fd) { o.fd = -1; }
  Fd& operator=(Fd&& o) noexcept {
    std::swap(fd, o.fd);
    return *this;
  }
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  int release() noexcept { return std::exchange(fd, -1); }
};

constexpr int kMaxLinks = 40;    // as the kernel's own limit on links in one resolution
constexpr int kMaxRetries = 16;  // a walk raced by renames (a step's file changed between two looks)

// openat2 with the containment rule in the kernel: a descriptor, or -errno.
int open_by_kernel(int folder, const std::filesystem::path& relative, int oflags, bool follow_outside) {
  open_how how{};
  how.flags = static_cast<std::uint64_t>(oflags);
  how.resolve = RESOLVE_NO_MAGICLINKS | (follow_outside ? 0 : RESOLVE_BENEATH);
  for (int attempt = 0;; ++attempt) {
    const long fd = ::syscall(SYS_openat2, folder, relative.c_str(), &how, sizeof how);
    if (fd >= 0) return static_cast<int>(fd);
    // EAGAIN: a rename raced a ".." in the resolution (the kernel then refuses to guess).
    if ((errno == EAGAIN || errno == EINTR) && attempt < kMaxRetries) continue;
    return -errno;
  }
}

// The same rule without openat2: one component at a time, every step O_NOFOLLOW relative to a folder
// the walk reached itself. A link's target is read from the link's own descriptor and walked in
// its place; an absolute target, or a ".." above the start, leaves the folder (-EXDEV).
int walk_once(int folder, const std::filesystem::path& relative, int oflags, bool& raced) {
  std::vector<Fd> stack;  // the folders entered below `folder`
  const auto current = [&] { return stack.empty() ? folder : stack.back().fd; };
  std::deque<std::string> todo;
  for (const auto& part : relative) todo.push_back(part.string());
  if (relative.is_absolute()) return -EXDEV;
  int links = 0;
  while (!todo.empty()) {
    const std::string part = std::move(todo.front());
    todo.pop_front();
    if (part.empty() || part == "." || part == "/") continue;
    if (part == "..") {
      if (stack.empty()) return -EXDEV;
      stack.pop_back();
      continue;
    }
    Fd step(::openat(current(), part.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (step.fd < 0) return -errno;
    struct stat st {};
    if (::fstat(step.fd, &st) != 0) return -errno;
    if (S_ISLNK(st.st_mode)) {
      if (++links > kMaxLinks) return -ELOOP;
      char target[PATH_MAX];
      const ssize_t n = ::readlinkat(step.fd, "", target, sizeof target);
      if (n < 0) return -errno;
      if (static_cast<std::size_t>(n) >= sizeof target) return -ENAMETOOLONG;
      const std::filesystem::path link(std::string(target, static_cast<std::size_t>(n)));
      if (link.is_absolute()) return -EXDEV;
      std::vector<std::string> parts;
      for (const auto& p : link) parts.push_back(p.string());
      todo.insert(todo.begin(), parts.begin(), parts.end());
      continue;
    }
    if (!todo.empty()) {
      if (!S_ISDIR(st.st_mode)) return -ENOTDIR;
      stack.push_back(std::move(step));
      continue;
    }
    if (oflags & O_PATH) return step.release();
    // The last step, opened for reading by name once more (O_NOFOLLOW): the same file as the
    // step just checked, or the walk raced a rename and starts again.
    const int fd = ::openat(current(), part.c_str(), oflags | O_NOFOLLOW);
    if (fd < 0) {
      if (errno == ELOOP || errno == ENOENT) raced = true;
      return -errno;
    }
    struct stat now {};
    if (::fstat(fd, &now) != 0 || now.st_dev != st.st_dev || now.st_ino != st.st_ino) {
      ::close(fd);
      raced = true;
      return -EAGAIN;
    }
    return fd;
  }
  // The folder itself.
  const int fd = ::openat(current(), ".", oflags);
  return fd >= 0 ? fd : -errno;
}

int open_by_walk(int folder, const std::filesystem::path& relative, int oflags, bool follow_outside) {
  if (follow_outside) {  // links followed on purpose (a shared cache): the kernel resolves them
    const int fd = ::openat(folder, relative.c_str(), oflags);
    return fd >= 0 ? fd : -errno;
  }
  for (int attempt = 0;; ++attempt) {
    bool raced = false;
    const int fd = walk_once(folder, relative, oflags, raced);
    if (fd >= 0 || !raced || attempt >= kMaxRetries) return fd;
  }
}

int resolve(int folder, const std::filesystem::path& relative, int oflags, bool follow_outside) {
  if (!walk_forced.load(std::memory_order_relaxed) && !no_openat2.load(std::memory_order_relaxed)) {
    const int fd = open_by_kernel(folder, relative, oflags, follow_outside);
    // ENOSYS: no openat2 here (remembered). EPERM: what older container seccomp profiles answer for
    // a system call they do not know (an open itself says EACCES); the walk then answers instead.
    if (fd != -ENOSYS && fd != -EPERM) return fd;
    if (fd == -ENOSYS) no_openat2.store(true, std::memory_order_relaxed);
  }
  return open_by_walk(folder, relative, oflags, follow_outside);
}

}  // namespace

bool is_posix(const FileSystem& fs) noexcept { return dynamic_cast<const PosixFileSystem*>(&fs) != nullptr; }

FolderHandle::FolderHandle(const std::filesystem::path& folder)
    : fd_(::open(folder.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC)) {}

FolderHandle::~FolderHandle() {
  if (fd_ >= 0) ::close(fd_);
}

std::unique_ptr<RandomAccessFile> open_beneath(int folder, const std::filesystem::path& relative,
                                               const std::filesystem::path& label, FileOpenFlags flags,
                                               bool follow_outside) {
  const int fd = resolve(folder, relative, read_flags(flags), follow_outside);
  if (fd == -EXDEV) return nullptr;
  if (fd < 0) fail(ErrorCode::io, label.string(), ": cannot open: ", std::strerror(-fd));
  return adopt(fd, label);
}

EntryKind stat_beneath(int folder, const std::filesystem::path& relative, bool follow_outside) {
  Fd fd(resolve(folder, relative, O_PATH | O_CLOEXEC, follow_outside));
  if (fd.fd == -EXDEV) return EntryKind::outside;
  if (fd.fd < 0) return EntryKind::absent;
  struct stat st {};
  if (::fstat(fd.fd, &st) != 0) return EntryKind::absent;
  if (S_ISREG(st.st_mode)) return EntryKind::regular;
  if (S_ISDIR(st.st_mode)) return EntryKind::directory;
  return EntryKind::other;
}

bool force_component_walk(bool on) noexcept { return walk_forced.exchange(on); }

}  // namespace io

}  // namespace lwload
