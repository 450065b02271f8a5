// Rounding to alignments and multiples, in one place: offsets and sizes in lwload are 64-bit file
// positions, so rounding up saturates instead of wrapping (a saturated value is always "too big"
// for whatever limit it is compared with next).
#pragma once

#include "core/layer.hpp"

#include <cstddef>
#include <cstdint>
#include <limits>

namespace lwload {

// The system's page size, queried once: what mappings, imports and prefaulting round to. The one
// page-size query in lwload, so tests can set a larger one (below).
std::size_t page_size() noexcept;

namespace testing {
// Makes page_size() answer `bytes` from now on (0: the system's again), so the suites run as on a
// kernel with 16 or 64 KiB pages: mapping, importing and populating at a multiple of the real page
// size is valid, so everything runs for real. Returns false, changing nothing, unless `bytes` is a
// power of two and a multiple of the system's page size. Not thread-safe against running loads:
// set before any.
bool set_page_size(std::size_t bytes) noexcept;
}  // namespace testing

// The kernel's own page size, whatever testing::set_page_size set: the unit of the kernel's
// answers (mincore's vector, cachestat's counts), never what lwload rounds to.
std::size_t system_page_size() noexcept;

// O_DIRECT offsets, sizes and buffer addresses: the logical block size every Linux file system
// accepts. Staging slots are multiples of it, so they serve O_DIRECT and pinning alike.
inline constexpr std::uint64_t kDirectIoAlignment = 4096;

// Padding between two tensors of a file that is cheaper to read or map through than to split at:
// the planner's regions and the loader's coalesced reads both bridge gaps up to this.
inline constexpr std::uint64_t kBridgedGap = 64 * 1024;

// The largest multiple of `alignment` ≤ value (alignment 0 or 1: value).
constexpr std::uint64_t align_down(std::uint64_t value, std::uint64_t alignment) noexcept {
  return alignment <= 1 ? value : value / alignment * alignment;
}

// The smallest multiple of `alignment` ≥ value, or UINT64_MAX when that does not fit 64 bits.
constexpr std::uint64_t align_up(std::uint64_t value, std::uint64_t alignment) noexcept {
  if (alignment <= 1) return value;
  const std::uint64_t rem = value % alignment;
  if (rem == 0) return value;
  const std::uint64_t add = alignment - rem;
  return value > std::numeric_limits<std::uint64_t>::max() - add ? std::numeric_limits<std::uint64_t>::max()
                                                                 : value + add;
}

}  // namespace lwload
