#include "io/page_cache.hpp"

#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "core/align.hpp"
#include "io/kernel_features.hpp"
#include "io/mmap_mapping.hpp"
#include "lwload/error.hpp"

// cachestat(2) is Linux 6.5; Debian 12's headers predate it. The number is the same on every
// architecture (the unified syscall table), and the structures are its uapi.
#ifndef __NR_cachestat
#define __NR_cachestat 451
#endif

namespace lwload::io {
namespace {

struct CachestatRange {
  std::uint64_t off, len;
};
struct Cachestat {
  std::uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted;
};

// Pages of [start, start + length) cached, by cachestat; false where the kernel lacks it.
bool by_cachestat(int fd, std::uint64_t start, std::uint64_t length, std::uint64_t& pages) {
  if (!cachestat().available) return false;  // probed once: no failing call per query
  CachestatRange range{start, length};
  Cachestat stat{};
  if (::syscall(__NR_cachestat, fd, &range, &stat, 0) != 0) return false;
  pages = stat.nr_cache;
  return true;
}

std::uint64_t by_mincore(const RandomAccessFile& file, std::uint64_t start, std::uint64_t length) {
  const int fd = file.native_handle();
  void* map = ::mmap(nullptr, length, PROT_READ, MAP_SHARED, fd, static_cast<off_t>(start));
  if (map == MAP_FAILED) fail(ErrorCode::io, file.path().string(), ": mmap for mincore: ", std::strerror(errno));
  const std::uint64_t page = system_page_size();  // mincore's unit, whatever lwload rounds to
  const std::uint64_t pages = (length + page - 1) / page;
  std::uint64_t cached = 0;
  std::vector<unsigned char> vec(std::min<std::uint64_t>(pages, 64 * 1024));  // windows: bounded whatever the size
  for (std::uint64_t first = 0; first < pages; first += vec.size()) {
    const std::uint64_t n = std::min<std::uint64_t>(vec.size(), pages - first);
    if (::mincore(static_cast<char*>(map) + first * page, std::min(n * page, length - first * page), vec.data()) != 0) {
      const int err = errno;
      ::munmap(map, length);
      fail(ErrorCode::io, file.path().string(), ": mincore: ", std::strerror(err));
    }
    for (std::uint64_t i = 0; i < n; ++i) cached += vec[i] & 1;
  }
  ::munmap(map, length);
  return cached;
}

}  // namespace

std::uint64_t cached_bytes(const RandomAccessFile& file, std::uint64_t offset, std::uint64_t length) {
  const int fd = file.native_handle();
  if (fd < 0 || length == 0) return length;
  const std::uint64_t start = align_down(offset, page_size());
  const std::uint64_t span = align_up(offset + length, page_size()) - start;
  std::uint64_t pages = 0;
  if (!by_cachestat(fd, start, span, pages)) pages = by_mincore(file, start, span);
  return std::min(length, pages * system_page_size());  // both count the kernel's pages
}

CachedCount count_cached(const RandomAccessFile& file, std::uint64_t offset, std::uint64_t length) {
  constexpr std::uint64_t kExact = 256 << 20, kWindow = 4 << 20, kWindows = 64;
  const int fd = file.native_handle();
  if (fd < 0 || length == 0) return {length, true};
  const std::uint64_t page = page_size();
  const std::uint64_t start = align_down(offset, page);
  const std::uint64_t span = align_up(offset + length, page) - start;
  std::uint64_t pages = 0;
  if (by_cachestat(fd, start, span, pages)) return {std::min(length, pages * system_page_size()), true};  // kernel pages
  if (length <= kExact) return {cached_bytes(file, offset, length), true};
  // Windows spread over the range, each counted exactly, scaled by the share of the range they
  // cover (in two steps, so the product stays in 64 bits).
  std::uint64_t cached = 0;
  const std::uint64_t stride = (length - kWindow) / (kWindows - 1);
  for (std::uint64_t i = 0; i < kWindows; ++i) cached += cached_bytes(file, offset + i * stride, kWindow);
  const std::uint64_t sampled = kWindow * kWindows;
  const std::uint64_t scaled = cached / sampled * length + cached % sampled * (length / sampled) +
                               cached % sampled * (length % sampled) / sampled;
  return {std::min(length, scaled), false};
}

std::uint64_t estimate_cached_bytes(const RandomAccessFile& file, std::uint64_t offset, std::uint64_t length) {
  return count_cached(file, offset, length).bytes;
}

}  // namespace lwload::io
