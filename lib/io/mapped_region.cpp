#include "io/mapped_region.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "lwload/error.hpp"
#include "lwload/file_system.hpp"

namespace lwload {

std::size_t page_size() noexcept {
  static const std::size_t size = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return size;
}

std::shared_ptr<MappedRegion> MappedRegion::map(const RandomAccessFile& file, std::uint64_t offset,
                                                std::uint64_t length, MapAdvice advice) {
  const int fd = file.native_handle();
  if (fd < 0) fail(ErrorCode::io, file.path().string(), ": cannot be mapped (no file descriptor)");
  const std::uint64_t size = file.size();
  if (offset > size || length > size - offset)
    fail(ErrorCode::bad_input, file.path().string(), ": mapping [", offset, ", +", length,
         ") extends past the end of the file (", size, " bytes)");
  const std::uint64_t page = page_size();
  const std::uint64_t start = offset / page * page;
  const std::size_t map_length = static_cast<std::size_t>(offset - start + length);
  if (map_length == 0) return std::shared_ptr<MappedRegion>(new MappedRegion(nullptr, 0, nullptr, offset, 0));
  void* base = ::mmap(nullptr, map_length, PROT_READ, MAP_SHARED, fd, static_cast<off_t>(start));
  if (base == MAP_FAILED)
    fail(ErrorCode::io, file.path().string(), ": mmap of ", map_length, " bytes at ", start, ": ",
         std::strerror(errno));
  int madv = MADV_NORMAL;
  switch (advice) {
    case MapAdvice::normal: break;
    case MapAdvice::sequential: madv = MADV_SEQUENTIAL; break;
    case MapAdvice::will_need: madv = MADV_WILLNEED; break;
    case MapAdvice::random: madv = MADV_RANDOM; break;
  }
  if (madv != MADV_NORMAL) ::madvise(base, map_length, madv);
  const auto* data = static_cast<const std::byte*>(base) + (offset - start);
  return std::shared_ptr<MappedRegion>(new MappedRegion(base, map_length, data, offset, length));
}

MappedRegion::~MappedRegion() {
  if (base_) ::munmap(base_, map_length_);
}

}  // namespace lwload
