#include "backends/cuda/buffers.hpp"

#include <cstring>

#include "lwload/cuda.hpp"
#include "lwload/error.hpp"

namespace lwload::cuda {

std::unique_ptr<CudaBuffer> Session::allocate(std::uint64_t bytes, MemoryPlace place) {
  const ContextScope scope(*this);
  const std::size_t size = bytes == 0 ? 1 : static_cast<std::size_t>(bytes);
  if (place == MemoryPlace::device_local) {
    CUdeviceptr ptr = 0;
    check(d_.cuMemAlloc_v2(&ptr, size), "cuMemAlloc", str(bytes, " bytes"));
    return std::unique_ptr<CudaBuffer>(
        new CudaBuffer(shared_from_this(), BufferKind::device_local, ptr, nullptr, bytes));
  }
  void* host = nullptr;
  check(d_.cuMemAllocHost_v2(&host, size), "cuMemAllocHost", str(bytes, " bytes"));
  CUdeviceptr device = 0;
  const CUresult r = d_.cuMemHostGetDevicePointer_v2(&device, host, 0);
  if (r != CUDA_SUCCESS) {
    d_.cuMemFreeHost(host);
    check(r, "cuMemHostGetDevicePointer", "pinned host memory");
  }
  return std::unique_ptr<CudaBuffer>(
      new CudaBuffer(shared_from_this(), BufferKind::host_visible, device, static_cast<std::byte*>(host), bytes));
}

ImportResult Session::import_host(std::span<const std::byte> range) {
  const ContextScope scope(*this);
  void* host = const_cast<std::byte*>(range.data());  // READ_ONLY: the device never writes it
  const CUresult r =
      d_.cuMemHostRegister_v2(host, range.size(), CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_READ_ONLY);
  if (r == CUDA_ERROR_OUT_OF_MEMORY) check(r, "cuMemHostRegister", str(range.size(), " bytes"));
  if (r != CUDA_SUCCESS)
    return ImportResult::decline(
        str("cuMemHostRegister(READ_ONLY | DEVICEMAP) refused ", range.size(), " bytes: ", result_name(d_, r)));
  CUdeviceptr device = 0;
  const CUresult p = d_.cuMemHostGetDevicePointer_v2(&device, host, 0);
  if (p != CUDA_SUCCESS) {
    d_.cuMemHostUnregister(host);
    return ImportResult::decline(str("cuMemHostGetDevicePointer on registered pages: ", result_name(d_, p)));
  }
  return {std::unique_ptr<CudaBuffer>(new CudaBuffer(shared_from_this(), BufferKind::imported, device,
                                                     const_cast<std::byte*>(range.data()), range.size())),
          {}};
}

CudaBuffer::~CudaBuffer() {
  const ContextScope scope(*session_);
  const Driver& d = session_->driver();
  switch (kind_) {
    case BufferKind::device_local: d.cuMemFree_v2(device_); break;
    case BufferKind::host_visible: d.cuMemFreeHost(host_); break;
    case BufferKind::imported: d.cuMemHostUnregister(host_); break;
  }
}

NativeHandle CudaBuffer::native() const noexcept {
  return {cu_deviceptr_type(), reinterpret_cast<void*>(static_cast<std::uintptr_t>(device_))};
}

void CudaBuffer::read_device(std::uint64_t offset, std::span<std::byte> dst) {
  const ContextScope scope(*session_);
  session_->check(session_->driver().cuMemcpyDtoH_v2(dst.data(), device_ + offset, dst.size()), "cuMemcpyDtoH",
                  str(dst.size(), " bytes, read-back"));
}

CudaStaging::CudaStaging(std::shared_ptr<Session> s, std::uint64_t bytes)
    : session_(std::move(s)), size_(static_cast<std::size_t>(bytes)) {
  const ContextScope scope(*session_);
  void* host = nullptr;
  session_->check(session_->driver().cuMemAllocHost_v2(&host, size_), "cuMemAllocHost", str(bytes, " bytes, staging"));
  bytes_ = static_cast<std::byte*>(host);
}

CudaStaging::~CudaStaging() {
  const ContextScope scope(*session_);
  session_->driver().cuMemFreeHost(bytes_);
}

}  // namespace lwload::cuda
