// CUDA memory lwload hands out: device memory (staged), pinned mapped host memory (direct), pinned
// host memory (the staging slots), and registered file pages (zero_copy: cuMemHostRegister with READ_ONLY |
// DEVICEMAP). Every kind is addressed by the device as a CUdeviceptr (cu_deviceptr_type() handles).
// The session makes them (Session::allocate, Session::import_host, defined in buffers.cpp).
#pragma once

#include "backends/cuda/layer.hpp"

#include <memory>
#include <span>

#include "backends/cuda/session.hpp"
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

// A staging slot: pinned host memory (cuMemAllocHost) cuMemcpyHtoDAsync reads at full speed. Not a
// host_visible buffer: a slot needs no device address, so staging works on a device that cannot
// map host memory (CAN_MAP_HOST_MEMORY 0, where direct placement is off).
class CudaStaging final : public StagingBuffer {
 public:
  CudaStaging(std::shared_ptr<Session> s, std::uint64_t bytes);
  ~CudaStaging() override;
  CudaStaging(const CudaStaging&) = delete;
  CudaStaging& operator=(const CudaStaging&) = delete;
  std::span<std::byte> bytes() noexcept override { return {bytes_, size_}; }

 private:
  std::shared_ptr<Session> session_;
  std::byte* bytes_ = nullptr;
  std::size_t size_;
};

}  // namespace lwload::cuda
