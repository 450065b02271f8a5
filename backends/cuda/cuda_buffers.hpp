// CUDA memory lwload hands out: device memory (staged), pinned mapped host memory (direct, and the
// staging slots), and registered file pages (zero_copy: cuMemHostRegister with READ_ONLY |
// DEVICEMAP). Every kind is addressed by the device as a CUdeviceptr (cu_deviceptr_type() handles).
#pragma once

#include "backends/cuda/layer.hpp"

#include <memory>
#include <span>

#include "backends/cuda/cuda_session.hpp"
#include "backends/session_buffer.hpp"

namespace lwload::cuda {

class CudaBuffer final : public SessionBuffer<Session> {
 public:
  // Device memory (device_local) or pinned mapped host memory (host_visible).
  static std::unique_ptr<CudaBuffer> allocate(std::shared_ptr<Session> s, std::uint64_t bytes, MemoryPlace place);
  // Registers file pages; `range` starts on a page. A refusal (read-only pages the driver cannot
  // pin, ...) declines with the driver's result; other failures throw.
  static ImportResult import(std::shared_ptr<Session> s, std::span<const std::byte> range);

  ~CudaBuffer() override;
  NativeHandle native() const noexcept override;

  CUdeviceptr device_pointer() const noexcept { return device_; }

 protected:
  void read_device(std::uint64_t offset, std::span<std::byte> dst) override;

 private:
  static std::unique_ptr<CudaBuffer> allocate_device(std::shared_ptr<Session> s, std::uint64_t bytes);
  static std::unique_ptr<CudaBuffer> allocate_pinned(std::shared_ptr<Session> s, std::uint64_t bytes);
  // host_visible memory is pinned (cuMemAllocHost), imported pages registered; both have `host`.
  CudaBuffer(std::shared_ptr<Session> s, BufferKind kind, CUdeviceptr device, std::byte* host, std::uint64_t size)
      : SessionBuffer(std::move(s), size, kind, "cuda_host_register"), device_(device) {
    host_ = host;
  }

  CUdeviceptr device_;
};

// A staging slot: pinned host memory cuMemcpyHtoDAsync reads at full speed.
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
