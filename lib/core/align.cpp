#include "core/align.hpp"

#include <unistd.h>

#include <atomic>

namespace lwload {
namespace {

std::atomic<std::size_t> g_page_size_set{0};  // testing::set_page_size; 0: the system's

}  // namespace

std::size_t page_size() noexcept {
  const std::size_t set = g_page_size_set.load(std::memory_order_relaxed);
  return set != 0 ? set : system_page_size();
}

std::size_t system_page_size() noexcept {
  static const std::size_t size = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return size;
}

namespace testing {

bool set_page_size(std::size_t bytes) noexcept {
  if (bytes != 0 && ((bytes & (bytes - 1)) != 0 || bytes % system_page_size() != 0)) return false;
  g_page_size_set.store(bytes, std::memory_order_relaxed);
  return true;
}

}  // namespace testing
}  // namespace lwload
