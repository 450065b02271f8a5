// Device buffers: host-write mapping, blocking read-back (for --verify) and sub-buffer views.
#include "backends/opencl/buffers.hpp"

#include <cstring>

#include "backends/opencl/cl_error.hpp"
#include "io/fault_guard.hpp"

namespace lwload::opencl {

void check_range(std::string_view what, std::uint64_t offset, std::uint64_t length, std::uint64_t size) {
  if (offset > size || length > size - offset)
    fail(ErrorCode::usage, what, ": range [", offset, ", +", length, ") outside a buffer of ", size, " bytes");
}

ClBuffer::ClBuffer(std::shared_ptr<const Session> session, cl::Buffer mem, std::uint64_t size,
                   std::string_view mechanism, Reservation reservation, cl::Buffer parent,
                   std::uint64_t origin, const std::byte* host_pages)
    : session_(std::move(session)), mem_(std::move(mem)), size_(size), mechanism_(mechanism), host_pages_(host_pages),
      parent_(std::move(parent)), origin_(origin), reservation_(std::move(reservation)) {}

ClBuffer::~ClBuffer() { unmap(); }

std::span<std::byte> ClBuffer::begin_host_write() {
  if (mapped_) return {static_cast<std::byte*>(mapped_), static_cast<std::size_t>(size_)};
  if (size_ == 0) return {};
  cl_int status = CL_SUCCESS;
  mapped_ = session_->queue.enqueueMapBuffer(mem_, CL_TRUE, CL_MAP_WRITE_INVALIDATE_REGION, 0, size_,
                                        nullptr, nullptr, &status);
  check(status, "clEnqueueMapBuffer", " (host write of ", size_, " bytes on ", session_->info.id(), ")");
  return {static_cast<std::byte*>(mapped_), static_cast<std::size_t>(size_)};  // mapped: fits the address space
}

void ClBuffer::end_host_write() {
  if (!mapped_) return;
  cl::Event unmapped;
  const cl_int status = session_->queue.enqueueUnmapMemObject(mem_, mapped_, nullptr, &unmapped);
  mapped_ = nullptr;
  check(status, "clEnqueueUnmapMemObject", " (", size_, " bytes on ", session_->info.id(), ")");
  // The bytes must be the device's before anyone (a kernel on another queue) reads them.
  check(unmapped.wait(), "clWaitForEvents", " (unmap of ", size_, " bytes on ", session_->info.id(), ")");
}

void ClBuffer::unmap() noexcept {
  if (!mapped_) return;
  cl::Event unmapped;
  if (session_->queue.enqueueUnmapMemObject(mem_, mapped_, nullptr, &unmapped) == CL_SUCCESS) unmapped.wait();
  mapped_ = nullptr;
}

void ClBuffer::copy_out(std::uint64_t offset, std::span<std::byte> dst) {
  // An import: the device works on these very pages (import.cpp checked the driver maps our
  // pointer), so they are read here, through the guarded copy. A driver read would touch them on
  // its own thread (PoCL's worker), where a truncated file is a SIGBUS no one can catch.
  if (host_pages_) {
    if (!io::copy_guarded(dst.data(), host_pages_ + offset, dst.size()))
      fail(ErrorCode::io, "opencl: ", dst.size(), " bytes at offset ", offset, " of an imported buffer on ",
           session_->info.id(), " could not be read: the file is shorter than when it was mapped");
    return;
  }
  check(session_->queue.enqueueReadBuffer(mem_, CL_TRUE, offset, dst.size(), dst.data()),
        "clEnqueueReadBuffer", " (", dst.size(), " bytes at offset ", offset, " on ", session_->info.id(), ")");
}

std::unique_ptr<DeviceBuffer> ClBuffer::view(std::uint64_t offset, std::uint64_t size) {
  check_range("view", offset, size, size_);
  const std::uint64_t origin = origin_ + offset;
  // Sub-buffer origins must meet CL_DEVICE_MEM_BASE_ADDR_ALIGN; callers then use (buffer, offset).
  if (size == 0 || origin % session_->info.caps.sub_buffer_alignment != 0) return nullptr;
  const cl::Buffer& root = parent_() ? parent_ : mem_;
  cl_buffer_region region{static_cast<std::size_t>(origin), static_cast<std::size_t>(size)};  // within a buffer
  cl_int status = CL_SUCCESS;
  cl_mem sub = clCreateSubBuffer(root(), 0, CL_BUFFER_CREATE_TYPE_REGION, &region, &status);
  if (status == CL_MISALIGNED_SUB_BUFFER_OFFSET) return nullptr;
  check(status, "clCreateSubBuffer", " (offset ", origin, ", ", size, " bytes on ", session_->info.id(), ")");
  return std::make_unique<ClBuffer>(session_, cl::Buffer(sub), size, mechanism_, Reservation{}, root, origin,
                                    host_pages_ ? host_pages_ + offset : nullptr);
}

void SvmRange::copy_out(std::uint64_t offset, std::span<std::byte> dst) {
  // SVM over imported file pages: a file truncated since must be an error, not a SIGBUS.
  if (!io::copy_guarded(dst.data(), range_.data() + offset, dst.size()))
    fail(ErrorCode::io, "opencl: ", dst.size(), " bytes at offset ", offset,
         " of a shared virtual memory range could not be read: the file is shorter than when it was mapped");
}

std::unique_ptr<DeviceBuffer> SvmRange::view(std::uint64_t offset, std::uint64_t size) {
  check_range("view", offset, size, range_.size());
  return std::make_unique<SvmRange>(range_.subspan(offset, size));
}

}  // namespace lwload::opencl
