// How much of a file is in the page cache: what the planner chooses reads by (a cold file on a
// discrete device is read with O_DIRECT) and what `plan` shows.
#pragma once

#include <cstdint>

#include "lwload/file_system.hpp"

namespace lwload::io {

// Bytes of [offset, offset + length) of `file` that are in the page cache now: cachestat(2)
// (Linux 6.5+) where the kernel has it, else mincore(2) over a transient mapping. A file without
// a descriptor (in memory) counts as cached. Throws Error(io) when neither call works.
std::uint64_t cached_bytes(const RandomAccessFile& file, std::uint64_t offset, std::uint64_t length);

// The same, estimated in constant time for large ranges: up to 64 MiB counted exactly, beyond that
// 32 evenly spaced 1 MiB samples scaled up. Counting is a walk of the cache's index (about 1 ms
// per GiB here), as much as a warm zero-copy load of a few GiB costs; a cold/warm decision needs a
// fraction, not a count.
std::uint64_t estimate_cached_bytes(const RandomAccessFile& file, std::uint64_t offset, std::uint64_t length);

}  // namespace lwload::io
