// The public face of the guarded copy (lwload/backend.hpp): backends built outside lwload read
// their imported file pages the way lwload's own do.
#include "io/fault_guard.hpp"
#include "lwload/backend.hpp"

namespace lwload {

bool copy_file_pages(void* dst, const void* src, std::size_t n) noexcept { return io::copy_guarded(dst, src, n); }

}  // namespace lwload
