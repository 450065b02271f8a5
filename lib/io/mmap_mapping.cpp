#include "io/mmap_mapping.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <vector>

#include "core/align.hpp"
#include "io/fault_guard.hpp"
#include "io/kernel_features.hpp"
#include "lwload/error.hpp"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22  // Linux 5.14 uapi; older headers lack the name, the kernel decides
#endif

namespace lwload {

std::shared_ptr<MmapMapping> MmapMapping::map(const RandomAccessFile& file, std::uint64_t offset, std::uint64_t length,
                                              MapAccess access) {
  const int fd = file.native_handle();
  if (fd < 0) fail(ErrorCode::io, file.path().string(), ": cannot be mapped (no file descriptor)");
  const std::uint64_t start = align_down(offset, page_size());
  // A 32-bit process cannot map more than its address space: refused here, never truncated.
  if (offset - start + length > std::numeric_limits<std::size_t>::max())
    fail(ErrorCode::does_not_fit, file.path().string(), ": mapping [", offset, ", +", length,
         ") is larger than this process's address space (", sizeof(void*) * 8, "-bit pointers)");
  const std::size_t map_length = static_cast<std::size_t>(offset - start + length);
  if (map_length == 0)
    return std::shared_ptr<MmapMapping>(new MmapMapping(file.path(), nullptr, 0, nullptr, offset, 0, false));
  // Where the kernel has no MADV_POPULATE_READ, a mapping that is to be made resident is populated
  // now, by the kernel, without a copy (MAP_POPULATE: as fast as MADV_POPULATE_READ, measured in
  // docs/BENCHMARKS.md); make_resident then only checks that no page was lost. Pages past the end
  // of a file truncated meanwhile are skipped by MAP_POPULATE, never a signal.
  const bool populate = access == MapAccess::resident && !io::populate_read().available;
  void* base =
      ::mmap(nullptr, map_length, PROT_READ, MAP_SHARED | (populate ? MAP_POPULATE : 0), fd, static_cast<off_t>(start));
  if (base == MAP_FAILED)
    fail(ErrorCode::io, file.path().string(), ": mmap of ", map_length, " bytes at ", start, ": ",
         std::strerror(errno));
  if (access == MapAccess::random) ::madvise(base, map_length, MADV_RANDOM);
  const auto* data = static_cast<const std::byte*>(base) + (offset - start);
  return std::shared_ptr<MmapMapping>(new MmapMapping(file.path(), base, map_length, data, offset, length, populate));
}

MmapMapping::~MmapMapping() {
  if (base_) ::munmap(base_, map_length_);
}

std::span<std::byte> MmapMapping::pages_of(std::uint64_t offset, std::uint64_t length) const noexcept {
  auto* const base = static_cast<std::byte*>(base_);
  const std::uint64_t head = static_cast<std::uint64_t>(data_ - base);
  const std::uint64_t first = align_down(head + offset, page_size());
  const std::uint64_t end = std::min<std::uint64_t>(align_up(head + offset + length, page_size()), map_length_);
  return {base + first, static_cast<std::size_t>(end - first)};
}

void MmapMapping::will_need(std::uint64_t offset, std::uint64_t length) const {
  if (offset >= length_ || length == 0) return;
  const std::span<std::byte> pages = pages_of(offset, std::min(length, length_ - offset));
  ::madvise(pages.data(), pages.size(), MADV_WILLNEED);
}

void MmapMapping::make_resident(std::uint64_t offset, std::uint64_t length) const {
  if (offset > length_ || length > length_ - offset)
    fail(ErrorCode::usage, path_.string(), ": make_resident [", offset, ", +", length, ") outside a ", length_,
         "-byte mapping");
  if (length == 0) return;
  const std::span<std::byte> pages = pages_of(offset, length);
  const auto lost = [&] {
    fail(ErrorCode::io, path_.string(), ": bytes [", offset_ + offset, ", ", offset_ + offset + length,
         ") of the mapped file could not be read: the file is shorter than when it was mapped (truncated "
         "during the load?)");
  };
  if (populated_) {
    // Populated when mapped. A file loses pages from its end only (a hole punched inside reads as
    // zeros), so the range lost none if its last byte can still be read: one guarded read, which
    // faults that page back in should it have been evicted since.
    if (!io::touch_guarded(data_ + offset + length - 1, 1, 1)) lost();
    return;
  }
  if (io::populate_read().available) {
    for (;;) {
      if (::madvise(pages.data(), pages.size(), MADV_POPULATE_READ) == 0) return;
      if (errno == EINTR || errno == EAGAIN) continue;
      if (errno == EFAULT) lost();
      if (errno != EINVAL)
        fail(ErrorCode::io, path_.string(), ": populating ", pages.size(), " mapped bytes: ", std::strerror(errno));
      break;  // EINVAL: refused after all (a filter on this thread only)
    }
  }
  // A mapping not made for residency on a kernel before 5.14: one guarded read per page.
  ::madvise(pages.data(), pages.size(), MADV_WILLNEED);
  if (!io::touch_guarded(pages.data(), pages.size(), page_size())) lost();
}

std::uint64_t MmapMapping::resident_bytes() const {
  if (!base_) return 0;
  const std::size_t page = system_page_size();  // mincore's unit, whatever lwload rounds to
  std::vector<unsigned char> in_core((map_length_ + page - 1) / page);
  if (::mincore(base_, map_length_, in_core.data()) != 0) return 0;
  std::uint64_t resident = 0;
  for (std::size_t i = 0; i < in_core.size(); ++i)
    if (in_core[i] & 1) resident += std::min<std::uint64_t>(page, map_length_ - i * page);
  return std::min<std::uint64_t>(resident, length_);
}

}  // namespace lwload
