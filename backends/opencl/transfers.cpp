// Staging slots and asynchronous uploads, completed through the shared CompletionQueue.
#include "backends/opencl/transfers.hpp"

#include "backends/opencl/check.hpp"
#include "backends/opencl/cpu_memory.hpp"

namespace lwload::opencl {

ClStaging::ClStaging(std::shared_ptr<const Session> session, std::uint64_t bytes)
    : session_(std::move(session)), size_(bytes) {
  if (bytes == 0) return;
  cl_int status = CL_SUCCESS;
  mem_ = cl::Buffer(session_->context, CL_MEM_ALLOC_HOST_PTR | CL_MEM_READ_ONLY, bytes, nullptr, &status);
  if (status == CL_INVALID_BUFFER_SIZE) status = CL_MEM_OBJECT_ALLOCATION_FAILURE;
  check(status, "clCreateBuffer", " (CL_MEM_ALLOC_HOST_PTR staging slot of ", bytes, " bytes on ", session_->info.id(),
        ")");
  advise_huge_pages(*session_, mem_, bytes);
  void* mapped = session_->queue.enqueueMapBuffer(mem_, CL_TRUE, CL_MAP_WRITE_INVALIDATE_REGION, 0, bytes, nullptr,
                                                  nullptr, &status);
  check(status, "clEnqueueMapBuffer", " (staging slot of ", bytes, " bytes on ", session_->info.id(), ")");
  mapped_ = static_cast<std::byte*>(mapped);
}

ClStaging::~ClStaging() {
  if (!mapped_) return;
  cl::Event unmapped;
  if (session_->queue.enqueueUnmapMemObject(mem_, mapped_, nullptr, &unmapped) == CL_SUCCESS) unmapped.wait();
}

CompletionQueue::Wait enqueue_upload(const std::shared_ptr<const Session>& session, const std::byte* source,
                                     const cl::Buffer& dst, std::uint64_t dst_offset, std::uint64_t bytes) {
  const std::string what = str(bytes, " bytes at offset ", dst_offset, " on ", session->info.id());
  if (bytes == 0) return [] { return std::exception_ptr(); };
  cl::Event written;
  check(session->queue.enqueueWriteBuffer(dst, CL_FALSE, dst_offset, bytes, source, nullptr, &written),
        "clEnqueueWriteBuffer", " (", what, ")");
  // Some drivers start nothing until the queue is flushed; the completion thread waits on it.
  check(session->queue.flush(), "clFlush", " (", what, ")");
  return [written, what]() noexcept -> std::exception_ptr {
    cl_int status = written.wait();
    if (status == CL_SUCCESS) {
      const cl_int query = written.getInfo(CL_EVENT_COMMAND_EXECUTION_STATUS, &status);
      if (query != CL_SUCCESS) status = query;
    }
    if (status >= 0) return nullptr;
    return std::make_exception_ptr(
        Error(is_out_of_memory(status) ? ErrorCode::out_of_memory : ErrorCode::device,
              str("clEnqueueWriteBuffer failed: ", error_name(status), " (", status, ") uploading ", what)));
  };
}

}  // namespace lwload::opencl
