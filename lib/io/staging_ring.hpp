// The staging ring: N slots × S bytes of the device's staging memory (the whole budget, allocated
// once), handed out and returned as reads fill them and uploads drain them.
#pragma once

#include "io/layer.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "lwload/backend.hpp"

namespace lwload::io {

class StagingRing {
 public:
  StagingRing() = default;
  // Allocates every slot now (Device::allocate_staging); throws what the device throws.
  StagingRing(Device& device, std::uint32_t slots, std::uint64_t slot_bytes);

  std::size_t slots() const noexcept { return buffers_.size(); }
  std::uint64_t slot_bytes() const noexcept { return slot_bytes_; }

  std::optional<std::size_t> acquire() noexcept;
  void release(std::size_t slot);

  StagingBuffer& buffer(std::size_t slot) { return *buffers_.at(slot); }
  std::span<std::byte> bytes(std::size_t slot) { return buffers_.at(slot)->bytes().first(slot_bytes_); }
  // True when every slot starts on an `alignment` boundary (O_DIRECT needs it).
  bool aligned_to(std::uint64_t alignment);

 private:
  std::uint64_t slot_bytes_ = 0;
  std::vector<std::unique_ptr<StagingBuffer>> buffers_;
  std::vector<std::size_t> free_;  // a stack: the most recently used slot is reused first
};

}  // namespace lwload::io
