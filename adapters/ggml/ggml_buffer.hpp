// The lwload buffers of a ggml device: slices of ggml backend buffers. Drivers cap how many
// allocations may live at once (Vulkan's maxMemoryAllocationCount, 4096 on many), so the device
// allocates few large ggml buffers and hands out one slice per tensor (ggml_arena.cpp); an import
// is one slice spanning its whole buffer. A ggml buffer is freed with the last slice of it.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include <ggml-backend.h>
#include <ggml.h>

#include "lwload/backend_impl.hpp"
#include "lwload/ggml.h"

namespace lwload::ggml {

// One ggml backend buffer (taken: freed here) and a 1-D I8 tensor spanning it, through which
// ggml_backend_tensor_set / _get address any byte range of it.
class SharedBuffer {
 public:
  // `imported`: the host range the buffer uses in place (file pages), empty for allocations.
  SharedBuffer(ggml_backend_buffer_t buffer, std::span<const std::byte> imported);
  SharedBuffer(const SharedBuffer&) = delete;
  SharedBuffer& operator=(const SharedBuffer&) = delete;
  ~SharedBuffer();

  ggml_backend_buffer_t buffer() const noexcept { return buffer_; }
  std::uint64_t size() const noexcept { return ggml_backend_buffer_get_size(buffer_); }
  std::span<const std::byte> imported() const noexcept { return imported_; }
  void write(std::uint64_t offset, const void* src, std::uint64_t bytes);
  void read(std::uint64_t offset, void* dst, std::uint64_t bytes) const;

 private:
  ggml_backend_buffer_t buffer_;
  std::span<const std::byte> imported_;
  ggml_context* context_ = nullptr;  // holds whole_
  ggml_tensor* whole_ = nullptr;
};

// [offset, offset + size) of a shared buffer, as an lwload DeviceBuffer whose native handle is an
// lwload_ggml_slice (NativeType "ggml_buffer_slice").
class Slice final : public DeviceBufferImpl {
 public:
  Slice(std::shared_ptr<SharedBuffer> shared, std::uint64_t offset, std::uint64_t size, std::string_view mechanism);

  std::uint64_t size() const noexcept override { return native_.size; }
  NativeHandle native() const noexcept override;
  std::string_view mechanism() const noexcept override { return mechanism_; }
  std::span<std::byte> begin_host_write() override;

  const lwload_ggml_slice& place() const noexcept { return native_; }
  void write(std::uint64_t offset, const std::byte* src, std::uint64_t bytes);

  static NativeType native_type();

 protected:
  void do_read_back(std::uint64_t offset, std::span<std::byte> dst) override;

 private:
  std::shared_ptr<SharedBuffer> shared_;
  lwload_ggml_slice native_;
  std::string_view mechanism_;
};

}  // namespace lwload::ggml
