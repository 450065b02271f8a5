// How much of a file is in the page cache: what the planner chooses reads by (a cold file on a
// discrete device is read with O_DIRECT), what `plan` shows and what a lazy load reports resident.
#pragma once

#include "io/layer.hpp"

#include <cstdint>

#include "lwload/file_system.hpp"

namespace lwload::io {

// Bytes of [offset, offset + length) of `file` that are in the page cache now: cachestat(2)
// (Linux 6.5+) where the kernel has it, else mincore(2) over a transient mapping, page by page (a
// cost that grows with the range: tests and benchmarks). A file without a descriptor (in memory)
// counts as cached. Throws Error(io) when neither call works.
std::uint64_t cached_bytes(const RandomAccessFile& file, std::uint64_t offset, std::uint64_t length);

// The same at a cost that does not grow with the range, and how sure it is. One cachestat(2) over
// the whole range counts exactly (the kernel walks the cache's index, whose holes it skips: a
// 4 TiB sparse file with one cached page costs microseconds, 28 GiB cached about 10 ms). Without
// cachestat, a range of at most kSampledPages kernel pages is counted exactly by one mincore(2);
// a longer one is estimated from kSampledPages pages spread evenly over it (the first and the last
// among them), one mincore each, scaled to the range: `samples` says how many.
inline constexpr std::uint32_t kSampledPages = 64;
struct CachedCount {
  std::uint64_t bytes = 0;
  std::uint32_t samples = 0;  // 0: counted exactly; else the kernel pages sampled (kSampledPages)
  bool exact() const noexcept { return samples == 0; }
};
CachedCount count_cached(const RandomAccessFile& file, std::uint64_t offset, std::uint64_t length);

}  // namespace lwload::io
