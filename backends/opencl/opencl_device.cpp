// Allocation and transfer entry points of an OpenCL device.
#include "backends/opencl/opencl_device.hpp"

#include "backends/opencl/buffers.hpp"
#include "backends/opencl/cl_error.hpp"
#include "backends/opencl/cpu_memory.hpp"
#include "backends/opencl/import.hpp"

namespace lwload::opencl {

OpenClDevice::OpenClDevice(std::shared_ptr<Session> session) : session_(std::move(session)) {}

OpenClDevice::~OpenClDevice() { completions_.wait_idle(); }

std::unique_ptr<DeviceBuffer> OpenClDevice::allocate_memory(std::uint64_t bytes, MemoryPlace place) {
  const DeviceInfo& info = session_->info;
  const bool host_visible = place == MemoryPlace::host_visible;
  const std::string_view kind = host_visible ? "host-visible" : "device-local";
  if (host_visible && !info.caps.host_visible_alloc)
    fail(ErrorCode::usage, "allocating ", bytes, " host-visible bytes on ", info.id(),
         ": the device is ", memory_model_name(info.memory), " (no host-visible allocations)");

  // OpenCL has no empty buffers; a zero-byte tensor still gets a (one-byte) handle.
  const std::uint64_t cl_size = bytes == 0 ? 1 : bytes;
  if (!session_->account->try_reserve(cl_size))
    fail(ErrorCode::out_of_memory, "allocating ", bytes, " ", kind, " bytes on ", info.id(),
         ": the device is out of memory (", session_->account->used(), " of ", session_->account->capacity(),
         " bytes of CL_DEVICE_GLOBAL_MEM_SIZE in use)");
  Reservation reservation(session_->account, cl_size);
  const cl_mem_flags flags = host_visible ? CL_MEM_ALLOC_HOST_PTR | CL_MEM_READ_WRITE : CL_MEM_READ_WRITE;
  cl_int status = CL_SUCCESS;
  cl::Buffer mem(session_->context, flags, cl_size, nullptr, &status);
  if (status == CL_INVALID_BUFFER_SIZE) status = CL_MEM_OBJECT_ALLOCATION_FAILURE;
  check(status, "clCreateBuffer", " (", bytes, " ", kind, " bytes on ", info.id(), ")");

  if (!host_visible) {
    // Drivers allocate lazily, at first use; migrating with undefined contents makes the
    // allocation happen now, so an out-of-memory device fails here, before any upload.
    cl::Event resident;
    status = session_->queue.enqueueMigrateMemObjects({mem}, CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED, nullptr, &resident);
    if (status == CL_SUCCESS) status = resident.wait();
    check(status, "clEnqueueMigrateMemObjects", " (making ", bytes, " device-local bytes resident on ",
          info.id(), ")");
  }
  advise_huge_pages(*session_, mem, cl_size);
  return std::make_unique<ClBuffer>(session_, std::move(mem), bytes, host_visible ? "host_visible" : "allocated",
                                    std::move(reservation));
}

ImportResult OpenClDevice::import_range(std::span<const std::byte> range) { return opencl::import_range(session_, range); }

std::unique_ptr<StagingBuffer> OpenClDevice::allocate_staging_memory(std::uint64_t bytes) {
  return std::make_unique<ClStaging>(session_, bytes);
}

void OpenClDevice::start_upload(StagingBuffer& staging, std::uint64_t src_offset, DeviceBuffer& dst,
                                std::uint64_t dst_offset, std::uint64_t bytes, TransferDone done) {
  auto* target = dynamic_cast<ClBuffer*>(&dst);
  if (!target)
    fail(ErrorCode::usage, "upload on ", session_->info.id(), ": destination buffer (", dst.mechanism(),
         ") was not made by this OpenCL device");
  if (!dynamic_cast<ClStaging*>(&staging))
    fail(ErrorCode::usage, "upload on ", session_->info.id(), ": staging buffer was not made by this OpenCL device");
  const std::span<std::byte> source = staging.bytes();
  completions_.push(enqueue_upload(session_, source.data() + src_offset, target->mem(), dst_offset, bytes), std::move(done));
}

void OpenClDevice::finish() {
  check(session_->queue.finish(), "clFinish", " on ", session_->info.id());
  completions_.wait_idle();
}

}  // namespace lwload::opencl
