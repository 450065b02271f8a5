#include "backends/host/host_memory.hpp"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <utility>

#include "lwload/error.hpp"

namespace lwload::host {
namespace {
constexpr std::uint64_t kHugePage = 2ull << 20;
}  // namespace

AnonymousMemory::AnonymousMemory(std::uint64_t bytes) {
  if (bytes == 0) return;
  if (bytes > std::numeric_limits<std::size_t>::max() / 2)
    fail(ErrorCode::out_of_memory, "host: cannot allocate ", bytes, " bytes");
  void* p = ::mmap(nullptr, static_cast<std::size_t>(bytes), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) fail(ErrorCode::out_of_memory, "host: cannot allocate ", bytes, " bytes: ", std::strerror(errno));
  // Large buffers are filled at memory speed; transparent huge pages cut their page faults 512×.
  if (bytes >= kHugePage) ::madvise(p, static_cast<std::size_t>(bytes), MADV_HUGEPAGE);
  data_ = static_cast<std::byte*>(p);
  size_ = static_cast<std::size_t>(bytes);
}

AnonymousMemory::~AnonymousMemory() {
  if (data_) ::munmap(data_, size_);
}

AnonymousMemory::AnonymousMemory(AnonymousMemory&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

AnonymousMemory& AnonymousMemory::operator=(AnonymousMemory&& other) noexcept {
  if (this != &other) {
    if (data_) ::munmap(data_, size_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

}  // namespace lwload::host
