// Device buffers: host-write mapping, blocking read-back (for --verify) and sub-buffer views.
#include "backends/opencl/buffers.hpp"

#include <cstring>

#include "backends/opencl/check.hpp"
#include "backends/opencl/cpu_memory.hpp"

namespace lwload::opencl {

ClBuffer::ClBuffer(std::shared_ptr<const Session> session, cl::Buffer mem, std::uint64_t size,
                   std::string_view mechanism, Reservation reservation, cl::Buffer parent, std::uint64_t origin,
                   const std::byte* host_pages)
    : session_(std::move(session)),
      mem_(std::move(mem)),
      size_(size),
      mechanism_(mechanism),
      host_pages_(host_pages),
      parent_(std::move(parent)),
      origin_(origin),
      reservation_(std::move(reservation)) {}

ClBuffer::~ClBuffer() { unmap(); }

std::unique_ptr<DeviceBuffer> Session::allocate(std::uint64_t bytes, MemoryPlace place) const {
  const std::shared_ptr<const Session> session = shared_from_this();
  const DeviceInfo& info = session->info;
  const bool host_visible = place == MemoryPlace::host_visible;
  const std::string_view kind = host_visible ? "host-visible" : "device-local";
  if (host_visible && !info.caps.host_visible_alloc)
    fail(ErrorCode::usage, "allocating ", bytes, " host-visible bytes on ", info.id(), ": the device is ",
         memory_model_name(info.memory), " (no host-visible allocations)");

  // OpenCL has no empty buffers; a zero-byte tensor still gets a (one-byte) handle.
  const std::uint64_t cl_size = bytes == 0 ? 1 : bytes;
  if (!session->account->try_reserve(cl_size))
    fail(ErrorCode::out_of_memory, "allocating ", bytes, " ", kind, " bytes on ", info.id(),
         ": the device is out of memory (", session->account->used(), " of ", session->account->capacity(),
         " bytes of CL_DEVICE_GLOBAL_MEM_SIZE in use)");
  Reservation reservation(session->account, cl_size);
  const cl_mem_flags flags = host_visible ? CL_MEM_ALLOC_HOST_PTR | CL_MEM_READ_WRITE : CL_MEM_READ_WRITE;
  cl_int status = CL_SUCCESS;
  cl::Buffer mem(session->context, flags, cl_size, nullptr, &status);
  if (status == CL_INVALID_BUFFER_SIZE) status = CL_MEM_OBJECT_ALLOCATION_FAILURE;
  check(status, "clCreateBuffer", " (", bytes, " ", kind, " bytes on ", info.id(), ")");

  if (!host_visible) {
    // Drivers allocate lazily, at first use; migrating with undefined contents makes the
    // allocation happen now, so an out-of-memory device fails here, before any upload.
    cl::Event resident;
    status =
        session->queue.enqueueMigrateMemObjects({mem}, CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED, nullptr, &resident);
    if (status == CL_SUCCESS) status = resident.wait();
    check(status, "clEnqueueMigrateMemObjects", " (making ", bytes, " device-local bytes resident on ", info.id(), ")");
  }
  advise_huge_pages(*session, mem, cl_size);
  return std::make_unique<ClBuffer>(session, std::move(mem), bytes, host_visible ? "host_visible" : "allocated",
                                    std::move(reservation));
}

std::span<std::byte> ClBuffer::begin_host_write() {
  if (mapped_) return {static_cast<std::byte*>(mapped_), static_cast<std::size_t>(size_)};
  if (size_ == 0) return {};
  cl_int status = CL_SUCCESS;
  mapped_ = session_->queue.enqueueMapBuffer(mem_, CL_TRUE, CL_MAP_WRITE_INVALIDATE_REGION, 0, size_, nullptr, nullptr,
                                             &status);
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

void ClBuffer::do_read_back(std::uint64_t offset, std::span<std::byte> dst) {
  // An import: the device works on these very pages (import.cpp checked the driver maps our
  // pointer), so they are read here, through the guarded copy. A driver read would touch them on
  // its own thread (PoCL's worker), where a truncated file is a SIGBUS no one can catch.
  if (host_pages_) {
    read_file_pages(dst, host_pages_ + offset, offset, session_->info.id());
    return;
  }
  check(session_->queue.enqueueReadBuffer(mem_, CL_TRUE, offset, dst.size(), dst.data()), "clEnqueueReadBuffer", " (",
        dst.size(), " bytes at offset ", offset, " on ", session_->info.id(), ")");
}

std::unique_ptr<DeviceBuffer> ClBuffer::do_view(std::uint64_t offset, std::uint64_t size) {
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

void SvmRange::do_read_back(std::uint64_t offset, std::span<std::byte> dst) {
  // SVM over imported file pages: a file truncated since must be an error, not a SIGBUS.
  read_file_pages(dst, range_.data() + offset, offset, "opencl: shared virtual memory range");
}

std::unique_ptr<DeviceBuffer> SvmRange::do_view(std::uint64_t offset, std::uint64_t size) {
  return std::make_unique<SvmRange>(range_.subspan(offset, size));
}

}  // namespace lwload::opencl
