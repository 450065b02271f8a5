// CUDA memory lwload hands out: device memory (staged), pinned mapped host memory (direct, and the
// staging slots), and registered file pages (zero_copy: cuMemHostRegister with READ_ONLY |
// DEVICEMAP). Every kind is addressed by the device as a CUdeviceptr (cu_deviceptr_type() handles).
// The session makes them (Session::allocate, Session::import_host, defined in cuda_buffers.cpp).
#pragma once

#include "backends/cuda/layer.hpp"

#include <memory>
#include <span>

#include "backends/cuda/cuda_session.hpp"
#include "backends/session_buffer.hpp"

namespace lwload::cuda {

class CudaBuffer final : public SessionBuffer<Session> {
 public:
  ~CudaBuffer() override;
  NativeHandle native() const noexcept override;

  CUdeviceptr device_pointer() const noexcept { return device_; }

 protected:
  void read_device(std::uint64_t offset, std::span<std::byte> dst) override;

 private:
  friend class Session;  // the only maker
  // host_visible memory is pinned (cuMemAllocHost), imported pages registered; both have `host`.
  CudaBuffer(std::shared_ptr<Session> s, BufferKind kind, CUdeviceptr device, std::byte* host, std::uint64_t size)
      : SessionBuffer(std::move(s), size, kind, "cuda_host_register"), device_(device) {
    host_ = host;
  }

  CUdeviceptr device_;
};

// A staging slot: pinned host memory cuMemcpyHtoDAsync reads at full speed. A host_visible buffer,
// so it is mapped too (cuMemHostGetDevicePointer), which every device with unified addressing
// (all a 64-bit driver runs) does for cuMemAllocHost memory.
using CudaStaging = HostVisibleStaging<CudaBuffer>;

}  // namespace lwload::cuda
