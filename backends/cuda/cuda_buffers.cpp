#include "backends/cuda/cuda_buffers.hpp"

#include <cstring>

#include "lwload/cuda.hpp"
#include "lwload/error.hpp"

namespace lwload::cuda {

std::unique_ptr<CudaBuffer> CudaBuffer::allocate(std::shared_ptr<Session> s, std::uint64_t bytes, MemoryPlace place) {
  return place == MemoryPlace::host_visible ? allocate_pinned(std::move(s), bytes) : allocate_device(std::move(s), bytes);
}

std::unique_ptr<CudaBuffer> CudaBuffer::allocate_device(std::shared_ptr<Session> s, std::uint64_t bytes) {
  const ContextScope scope(*s);
  CUdeviceptr ptr = 0;
  s->check(s->driver().cuMemAlloc_v2(&ptr, bytes == 0 ? 1 : bytes), "cuMemAlloc", str(bytes, " bytes"));
  return std::unique_ptr<CudaBuffer>(new CudaBuffer(std::move(s), BufferKind::device_local, ptr, nullptr, bytes));
}

std::unique_ptr<CudaBuffer> CudaBuffer::allocate_pinned(std::shared_ptr<Session> s, std::uint64_t bytes) {
  const ContextScope scope(*s);
  void* host = nullptr;
  s->check(s->driver().cuMemAllocHost_v2(&host, bytes == 0 ? 1 : bytes), "cuMemAllocHost", str(bytes, " bytes"));
  CUdeviceptr device = 0;
  const CUresult r = s->driver().cuMemHostGetDevicePointer_v2(&device, host, 0);
  if (r != CUDA_SUCCESS) {
    s->driver().cuMemFreeHost(host);
    s->check(r, "cuMemHostGetDevicePointer", "pinned host memory");
  }
  return std::unique_ptr<CudaBuffer>(new CudaBuffer(std::move(s), BufferKind::host_visible, device, static_cast<std::byte*>(host), bytes));
}

ImportResult CudaBuffer::import(std::shared_ptr<Session> s, std::span<const std::byte> range) {
  const ContextScope scope(*s);
  const Driver& d = s->driver();
  void* host = const_cast<std::byte*>(range.data());  // READ_ONLY: the device never writes it
  const CUresult r = d.cuMemHostRegister_v2(host, range.size(), CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_READ_ONLY);
  if (r == CUDA_ERROR_OUT_OF_MEMORY) s->check(r, "cuMemHostRegister", str(range.size(), " bytes"));
  if (r != CUDA_SUCCESS)
    return ImportResult::decline(str("cuMemHostRegister(READ_ONLY | DEVICEMAP) refused ", range.size(), " bytes: ",
                                     result_name(d, r)));
  CUdeviceptr device = 0;
  const CUresult p = d.cuMemHostGetDevicePointer_v2(&device, host, 0);
  if (p != CUDA_SUCCESS) {
    d.cuMemHostUnregister(host);
    return ImportResult::decline(str("cuMemHostGetDevicePointer on registered pages: ", result_name(d, p)));
  }
  return {std::unique_ptr<CudaBuffer>(new CudaBuffer(std::move(s), BufferKind::imported, device,
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
