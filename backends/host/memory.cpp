#include "backends/host/memory.hpp"
#include "core/align.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <limits>
#include <utility>

#include "lwload/error.hpp"

namespace lwload::host {
namespace {

// MADV_POPULATE_WRITE (Linux 5.14+). Older kernels (and sandboxes) answer EINVAL, which is learnt
// at the first refusal: the rest of the process asks no more, once per process rather than per
// allocation and per chunk copied. The pages then fault in during the copy, as before 5.14.
std::atomic<bool> g_populate_write_refused{false};

void populate_write(void* begin, std::size_t bytes) noexcept {
  if (g_populate_write_refused.load(std::memory_order_relaxed)) return;
  if (::madvise(begin, bytes, MADV_POPULATE_WRITE) != 0 && errno == EINVAL)
    g_populate_write_refused.store(true, std::memory_order_relaxed);
}

}  // namespace

AnonymousMemory::AnonymousMemory(std::uint64_t bytes) {
  if (bytes == 0) return;
  if (bytes > std::numeric_limits<std::size_t>::max() / 2)
    fail(ErrorCode::out_of_memory, "host: cannot allocate ", bytes, " bytes");
  void* p =
      ::mmap(nullptr, static_cast<std::size_t>(bytes), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    fail(ErrorCode::out_of_memory, "host: cannot allocate ", bytes, " bytes: ", std::strerror(errno));
  // No MADV_HUGEPAGE: with the common THP setting defrag=madvise it makes first touch wait for
  // compaction (measured 5× slower filling 2 GiB on a 2-core VM). prefault() is the fast path.
  data_ = static_cast<std::byte*>(p);
  size_ = static_cast<std::size_t>(bytes);
}

void AnonymousMemory::prefault() const noexcept {
  // MADV_POPULATE_WRITE maps and zeroes every page in one call instead of one fault per 4 KiB page
  // during the copy — 4-5× cheaper on VMs, where each fault is a trap.
  if (data_) populate_write(data_, size_);
}

void AnonymousMemory::prefault(std::span<std::byte> range) noexcept {
  if (range.empty()) return;
  const auto page = static_cast<std::uintptr_t>(page_size());
  const auto begin = reinterpret_cast<std::uintptr_t>(range.data()) & ~(page - 1);
  const auto end = (reinterpret_cast<std::uintptr_t>(range.data()) + range.size() + page - 1) & ~(page - 1);
  populate_write(reinterpret_cast<void*>(begin), end - begin);
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
