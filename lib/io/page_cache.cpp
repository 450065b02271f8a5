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

// A read-only shared mapping of whole kernel pages, made only to ask mincore about them: nothing
// is faulted in, and it is gone when this is.
class Transient {
 public:
  Transient(const RandomAccessFile& file, std::uint64_t start, std::uint64_t length) : file_(file), length_(length) {
    base_ = ::mmap(nullptr, length, PROT_READ, MAP_SHARED, file.native_handle(), static_cast<off_t>(start));
  }
  ~Transient() {
    if (mapped()) ::munmap(base_, length_);
  }
  Transient(const Transient&) = delete;
  Transient& operator=(const Transient&) = delete;

  bool mapped() const noexcept { return base_ != MAP_FAILED; }
  void require() const {
    if (!mapped()) fail(ErrorCode::io, file_.path().string(), ": mmap for mincore: ", std::strerror(errno));
  }
  // Cached pages of [offset, +length) of the mapping; `vec` holds at least that many pages.
  std::uint64_t count(std::uint64_t offset, std::uint64_t length, std::vector<unsigned char>& vec) const {
    if (::mincore(static_cast<char*>(base_) + offset, length, vec.data()) != 0)
      fail(ErrorCode::io, file_.path().string(), ": mincore: ", std::strerror(errno));
    const std::uint64_t pages = (length + system_page_size() - 1) / system_page_size();
    std::uint64_t cached = 0;
    for (std::uint64_t i = 0; i < pages; ++i) cached += vec[i] & 1;
    return cached;
  }

 private:
  const RandomAccessFile& file_;
  std::uint64_t length_;
  void* base_;
};

// Every page of [start, +length) (kernel pages), by mincore: in windows, so the vector stays
// bounded whatever the size.
std::uint64_t every_page(const RandomAccessFile& file, std::uint64_t start, std::uint64_t length) {
  const Transient map(file, start, length);
  map.require();
  const std::uint64_t page = system_page_size();  // mincore's unit, whatever lwload rounds to
  const std::uint64_t window = 64 * 1024 * page;
  std::vector<unsigned char> vec(
      static_cast<std::size_t>(std::min<std::uint64_t>((length + page - 1) / page, 64 * 1024)));
  std::uint64_t cached = 0;
  for (std::uint64_t at = 0; at < length; at += window) cached += map.count(at, std::min(window, length - at), vec);
  return cached;
}

// kSampledPages kernel pages of [start, +length), evenly spread (the first and the last page
// among them): one mincore each, on one transient mapping of the range, or on one mapping per
// page where the address space has no room for the range (a 32-bit process).
std::uint32_t sampled_pages(const RandomAccessFile& file, std::uint64_t start, std::uint64_t length) {
  const std::uint64_t page = system_page_size();
  const std::uint64_t pages = (length + page - 1) / page;
  std::vector<unsigned char> vec(1);
  const Transient whole(file, start, length);
  std::uint32_t cached = 0;
  for (std::uint64_t i = 0; i < kSampledPages; ++i) {
    const std::uint64_t at = i * (pages - 1) / (kSampledPages - 1) * page;  // i * (pages - 1) < 2^6 * 2^52
    if (whole.mapped()) {
      cached += static_cast<std::uint32_t>(whole.count(at, page, vec));
    } else {
      const Transient one(file, start + at, page);
      one.require();
      cached += static_cast<std::uint32_t>(one.count(0, page, vec));
    }
  }
  return cached;
}

}  // namespace

std::uint64_t cached_bytes(const RandomAccessFile& file, std::uint64_t offset, std::uint64_t length) {
  const int fd = file.native_handle();
  if (fd < 0 || length == 0) return length;
  const std::uint64_t start = align_down(offset, system_page_size());
  const std::uint64_t span = align_up(offset + length, system_page_size()) - start;
  std::uint64_t pages = 0;
  if (!by_cachestat(fd, start, span, pages)) pages = every_page(file, start, span);
  return std::min(length, pages * system_page_size());  // both count the kernel's pages
}

CachedCount count_cached(const RandomAccessFile& file, std::uint64_t offset, std::uint64_t length) {
  const int fd = file.native_handle();
  if (fd < 0 || length == 0) return {length, 0};
  const std::uint64_t page = system_page_size();
  const std::uint64_t start = align_down(offset, page);
  const std::uint64_t span = align_up(offset + length, page) - start;
  std::uint64_t pages = 0;
  if (by_cachestat(fd, start, span, pages)) return {std::min(length, pages * page), 0};
  if (span / page <= kSampledPages) return {std::min(length, every_page(file, start, span) * page), 0};
  // The share of sampled pages cached, of the range (in two steps, so the product stays in 64 bits).
  const std::uint64_t cached = sampled_pages(file, start, span);
  const std::uint64_t scaled = length / kSampledPages * cached + length % kSampledPages * cached / kSampledPages;
  return {std::min(length, scaled), kSampledPages};
}

}  // namespace lwload::io
