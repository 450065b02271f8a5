#include "core/align.hpp"

#include <unistd.h>

namespace lwload {

std::size_t page_size() noexcept {
  static const std::size_t size = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return size;
}

}  // namespace lwload
