// Page-cache eviction and residency checks (see bench_cache.hpp).
#include "bench_cache.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "io/page_cache.hpp"
#include "lwload/error.hpp"
#include "lwload/file_system.hpp"

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

// Cached bytes and size of one file (io::cached_bytes: cachestat, else mincore).
std::pair<std::uint64_t, std::uint64_t> residency(const std::filesystem::path& path) {
  const auto file = posix_file_system()->open(path);
  const std::uint64_t size = file->size();
  return {io::cached_bytes(*file, 0, size), size};
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
  const auto [cached, size] = residency(path);
  return size == 0 ? 0.0 : static_cast<double>(cached) / static_cast<double>(size);
}

double cached_fraction(std::span<const std::filesystem::path> paths) {
  std::uint64_t cached = 0, size = 0;
  for (const auto& p : paths) {
    const auto [c, n] = residency(p);
    cached += c;
    size += n;
  }
  return size == 0 ? 0.0 : static_cast<double>(cached) / static_cast<double>(size);
}

}  // namespace lwload::bench
