#include "io/staging_ring.hpp"

#include "lwload/error.hpp"

namespace lwload::io {

StagingRing::StagingRing(Device& device, std::uint32_t slots, std::uint64_t slot_bytes) : slot_bytes_(slot_bytes) {
  buffers_.reserve(slots);
  for (std::uint32_t i = 0; i < slots; ++i) {
    auto buffer = device.allocate_staging(slot_bytes);
    if (!buffer || buffer->bytes().size() < slot_bytes)
      fail(ErrorCode::device, "device ", device.info().id(), " returned a staging buffer smaller than ", slot_bytes,
           " bytes");
    buffers_.push_back(std::move(buffer));
  }
  for (std::size_t i = slots; i-- > 0;) free_.push_back(i);
}

std::optional<std::size_t> StagingRing::acquire() noexcept {
  if (free_.empty()) return std::nullopt;
  const std::size_t slot = free_.back();
  free_.pop_back();
  return slot;
}

void StagingRing::release(std::size_t slot) { free_.push_back(slot); }

bool StagingRing::aligned_to(std::uint64_t alignment) {
  for (auto& b : buffers_)
    if (reinterpret_cast<std::uintptr_t>(b->bytes().data()) % alignment != 0) return false;
  return true;
}

}  // namespace lwload::io
