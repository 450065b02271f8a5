// How much of a file is in the page cache: what the planner chooses reads by (a cold file on a
// discrete device is read with O_DIRECT) and what `plan` shows.
#pragma once

#include "io/layer.hpp"

#include <cstdint>

#include "lwload/file_system.hpp"

namespace lwload::io {

// Bytes of [offset, offset + length) of `file` that are in the page cache now: cachestat(2)
// (Linux 6.5+) where the kernel has it, else mincore(2) over a transient mapping. A file without
// a descriptor (in memory) counts as cached. Throws Error(io) when neither call works.
std::uint64_t cached_bytes(const RandomAccessFile& file, std::uint64_t offset, std::uint64_t length);

// The same with a bounded cost: one cachestat(2) over the whole range counts exactly (the kernel
// walks the cache's index, whose holes it skips: a 4 TiB sparse file with one cached page costs
// microseconds, 28 GiB cached about 10 ms). Without cachestat, mincore(2) counts up to 256 MiB
// exactly and beyond that 64 evenly spaced 4 MiB windows, scaled to the range: `exact` false.
struct CachedCount {
  std::uint64_t bytes = 0;
  bool exact = true;
};
CachedCount count_cached(const RandomAccessFile& file, std::uint64_t offset, std::uint64_t length);
std::uint64_t estimate_cached_bytes(const RandomAccessFile& file, std::uint64_t offset, std::uint64_t length);

}  // namespace lwload::io
