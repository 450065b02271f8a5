// The public face of the guarded copy (lwload/backend.hpp): backends, lwload's own and those built
// outside it, read their imported file pages through it, with one error for a lost page.
#include "io/fault_guard.hpp"
#include "lwload/backend_impl.hpp"
#include "lwload/error.hpp"

namespace lwload {

bool copy_file_pages(void* dst, const void* src, std::size_t n) noexcept { return io::copy_guarded(dst, src, n); }

void read_file_pages(std::span<std::byte> dst, const std::byte* src, std::uint64_t offset, std::string_view where) {
  if (!io::copy_guarded(dst.data(), src, dst.size()))
    fail(ErrorCode::io, where, ": ", dst.size(), " bytes at offset ", offset,
         " of imported file pages could not be read: the file is shorter than when it was mapped");
}

}  // namespace lwload
