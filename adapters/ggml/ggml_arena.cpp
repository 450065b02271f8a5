// Slices cut from shared ggml buffers (ggml_arena.hpp).
#include "ggml_arena.hpp"

#include <algorithm>

#include "lwload/error.hpp"

namespace lwload::ggml {
namespace {

std::uint64_t round_up(std::uint64_t value, std::uint64_t multiple) {
  return multiple <= 1 ? value : (value + multiple - 1) / multiple * multiple;
}

}  // namespace

Arena::Arena(ggml_backend_buffer_type_t type, std::uint64_t alignment, std::uint64_t max_buffer)
    : type_(type), alignment_(std::max<std::uint64_t>(alignment, 1)), max_buffer_(max_buffer) {}

std::unique_ptr<Slice> Arena::allocate(std::uint64_t bytes, std::string_view mechanism) {
  // A slice ends at the next one's alignment, so slices never share bytes; the last one may end
  // short of it where that is the buffer's end.
  const std::uint64_t cut = std::min(round_up(std::max<std::uint64_t>(bytes, 1), alignment_), max_buffer_);
  if (!open_ || used_ + cut > open_->size()) {
    // A new buffer: what is still expected (or the next step of growth), at least this slice, at
    // most the buffer type's max size. The old buffer lives on in its slices.
    std::uint64_t want = expected_ ? expected_ : grow_;
    if (!expected_) grow_ = std::min<std::uint64_t>(grow_ * 2, 256ull << 20);
    want = std::clamp<std::uint64_t>(want, cut, std::max(cut, max_buffer_));
    ggml_backend_buffer_t buffer = ggml_backend_buft_alloc_buffer(type_, want);
    if (!buffer)
      fail(ErrorCode::out_of_memory, "ggml: buffer type ", ggml_backend_buft_name(type_), " could not allocate ", want,
           " bytes (a buffer for ", bytes, "-byte tensors and its neighbours; ", buffers_made_,
           " buffers made before it)");
    ggml_backend_buffer_set_usage(buffer, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    open_ = std::make_shared<SharedBuffer>(buffer, std::span<const std::byte>{});
    used_ = 0;
    ++buffers_made_;
  }
  auto slice = std::make_unique<Slice>(open_, used_, cut, mechanism);
  used_ += cut;
  expected_ -= std::min(expected_, cut);
  return slice;
}

}  // namespace lwload::ggml
