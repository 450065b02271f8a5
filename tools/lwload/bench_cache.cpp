// Page-cache eviction and residency checks (see bench_cache.hpp).
#include "bench_cache.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "lwload/error.hpp"

namespace lwload::bench {
namespace {

// An open descriptor that closes itself.
class Fd {
 public:
  explicit Fd(const std::filesystem::path& path) : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
    if (fd_ < 0) fail(ErrorCode::io, path.string(), ": cannot open: ", std::strerror(errno));
  }
  ~Fd() { ::close(fd_); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const noexcept { return fd_; }

 private:
  int fd_;
};

std::uint64_t file_size(int fd, const std::filesystem::path& path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) fail(ErrorCode::io, path.string(), ": fstat: ", std::strerror(errno));
  return static_cast<std::uint64_t>(st.st_size);
}

// Cached pages and total pages of one file.
std::pair<std::uint64_t, std::uint64_t> residency(const std::filesystem::path& path) {
  const Fd fd(path);
  const std::uint64_t size = file_size(fd.get(), path);
  if (size == 0) return {0, 0};
  const std::uint64_t page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  const std::uint64_t pages = (size + page - 1) / page;
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd.get(), 0);
  if (map == MAP_FAILED) fail(ErrorCode::io, path.string(), ": mmap for mincore: ", std::strerror(errno));
  std::uint64_t cached = 0;
  // Walk in windows so the vector stays small whatever the file's size.
  std::vector<unsigned char> vec(64 * 1024);
  for (std::uint64_t first = 0; first < pages; first += vec.size()) {
    const std::uint64_t n = std::min<std::uint64_t>(vec.size(), pages - first);
    const std::uint64_t length = std::min<std::uint64_t>(n * page, size - first * page);
    if (::mincore(static_cast<char*>(map) + first * page, length, vec.data()) != 0) {
      const int err = errno;
      ::munmap(map, size);
      fail(ErrorCode::io, path.string(), ": mincore: ", std::strerror(err));
    }
    for (std::uint64_t i = 0; i < n; ++i) cached += vec[i] & 1;
  }
  ::munmap(map, size);
  return {cached, pages};
}

}  // namespace

void evict_from_page_cache(const std::filesystem::path& path) {
  const Fd fd(path);
  // Dirty pages cannot be dropped; a freshly written model has many.
  if (::fdatasync(fd.get()) != 0) fail(ErrorCode::io, path.string(), ": fdatasync: ", std::strerror(errno));
  const int err = ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_DONTNEED);
  if (err != 0) fail(ErrorCode::io, path.string(), ": posix_fadvise(DONTNEED): ", std::strerror(err));
}

double cached_fraction(const std::filesystem::path& path) {
  const auto [cached, pages] = residency(path);
  return pages == 0 ? 0.0 : static_cast<double>(cached) / static_cast<double>(pages);
}

double cached_fraction(std::span<const std::filesystem::path> paths) {
  std::uint64_t cached = 0, pages = 0;
  for (const auto& p : paths) {
    const auto [c, n] = residency(p);
    cached += c;
    pages += n;
  }
  return pages == 0 ? 0.0 : static_cast<double>(cached) / static_cast<double>(pages);
}

}  // namespace lwload::bench
