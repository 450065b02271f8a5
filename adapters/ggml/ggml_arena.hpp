// Sub-allocation for a ggml device: every direct and staged tensor is a slice of a shared ggml
// buffer of the device's buffer type, so a model of 20,000 tensors holds a handful of driver
// allocations, not 20,000 (Vulkan drivers cap live allocations: maxMemoryAllocationCount, 4096 on
// many, which ggml does not report). Buffers are at most the buffer type's max size.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include <ggml-backend.h>

#include "ggml_buffer.hpp"

namespace lwload::ggml {

class Arena {
 public:
  // `alignment`: where each slice starts (the buffer type's tensor alignment); `max_buffer`: the
  // largest ggml buffer to ask for.
  Arena(ggml_backend_buffer_type_t type, std::uint64_t alignment, std::uint64_t max_buffer);

  // The bytes of slices about to be asked for (the plan's direct and staged tensors, each rounded
  // up to the alignment): buffers are then sized to hold them. Without it (lwload::load on a device
  // of open_device) buffers grow from 1 MiB, doubling up to 256 MiB: at most that much, or as much
  // as was asked for before, is left unused.
  void expect(std::uint64_t bytes) noexcept { expected_ = bytes; }

  // A slice of `bytes` (at most max_buffer). Error(out_of_memory) naming the size and how many
  // buffers the arena holds when the device refuses a new buffer.
  std::unique_ptr<Slice> allocate(std::uint64_t bytes, std::string_view mechanism);

  std::uint64_t buffers_made() const noexcept { return buffers_made_; }

 private:
  ggml_backend_buffer_type_t type_;
  std::uint64_t alignment_;
  std::uint64_t max_buffer_;
  std::uint64_t expected_ = 0;          // bytes still expected (expect())
  std::uint64_t grow_ = 1ull << 20;     // the next buffer's size when nothing is expected; doubles
  std::shared_ptr<SharedBuffer> open_;  // the buffer slices are cut from now
  std::uint64_t used_ = 0;              // of open_
  std::uint64_t buffers_made_ = 0;
};

}  // namespace lwload::ggml
