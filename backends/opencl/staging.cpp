// Staging slots and asynchronous uploads with event callbacks.
#include "backends/opencl/staging.hpp"

#include "backends/opencl/cl_error.hpp"
#include "backends/opencl/cpu_memory.hpp"

namespace lwload::opencl {

ClStaging::ClStaging(std::shared_ptr<const Runtime> rt, std::uint64_t bytes)
    : rt_(std::move(rt)), size_(bytes) {
  if (bytes == 0) return;
  if (bytes > rt_->info.caps.max_alloc)
    fail(ErrorCode::out_of_memory, "staging slot of ", bytes, " bytes on ", rt_->info.id(),
         ": larger than the device's max allocation of ", rt_->info.caps.max_alloc, " bytes");
  cl_int status = CL_SUCCESS;
  mem_ = cl::Buffer(rt_->context, CL_MEM_ALLOC_HOST_PTR | CL_MEM_READ_ONLY, bytes, nullptr, &status);
  if (status == CL_INVALID_BUFFER_SIZE) status = CL_MEM_OBJECT_ALLOCATION_FAILURE;
  check(status, "clCreateBuffer", " (CL_MEM_ALLOC_HOST_PTR staging slot of ", bytes, " bytes on ",
        rt_->info.id(), ")");
  advise_huge_pages(*rt_, mem_, bytes);
  void* mapped = rt_->queue.enqueueMapBuffer(mem_, CL_TRUE, CL_MAP_WRITE_INVALIDATE_REGION, 0, bytes,
                                             nullptr, nullptr, &status);
  check(status, "clEnqueueMapBuffer", " (staging slot of ", bytes, " bytes on ", rt_->info.id(), ")");
  mapped_ = static_cast<std::byte*>(mapped);
}

ClStaging::~ClStaging() {
  if (!mapped_) return;
  cl::Event unmapped;
  if (rt_->queue.enqueueUnmapMemObject(mem_, mapped_, nullptr, &unmapped) == CL_SUCCESS) unmapped.wait();
}

void InFlight::begin() {
  const std::lock_guard lock(mutex_);
  ++count_;
}

void InFlight::end() noexcept {
  const std::lock_guard lock(mutex_);
  if (--count_ == 0) idle_.notify_all();
}

void InFlight::wait_idle() {
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [&] { return count_ == 0; });
}

namespace {

// Owned by the event callback: created per upload, deleted by the callback that consumes it.
struct PendingUpload {
  TransferDone done;
  std::shared_ptr<InFlight> in_flight;
  std::string what;  // "<bytes> bytes at offset <o> on opencl:N", for a failed transfer's message
};

void complete(PendingUpload* pending, cl_int status) noexcept {
  std::exception_ptr error;
  if (status < 0) {
    error = std::make_exception_ptr(
        Error(is_out_of_memory(status) ? ErrorCode::out_of_memory : ErrorCode::device,
              str("clEnqueueWriteBuffer failed: ", error_name(status), " (", status, ") uploading ",
                  pending->what)));
  }
  try {
    pending->done(error);
  } catch (...) {
    // A driver thread has nowhere to send an exception; the loader reports its own failures.
  }
  pending->in_flight->end();
  delete pending;
}

void CL_CALLBACK on_write_complete(cl_event, cl_int status, void* user_data) {
  complete(static_cast<PendingUpload*>(user_data), status);
}

}  // namespace

void enqueue_upload(const std::shared_ptr<const Runtime>& rt, const std::shared_ptr<InFlight>& in_flight,
                    const std::byte* source, const cl::Buffer& dst, std::uint64_t dst_offset,
                    std::uint64_t bytes, TransferDone done) {
  const std::string what = str(bytes, " bytes at offset ", dst_offset, " on ", rt->info.id());
  if (bytes == 0) {
    done(nullptr);
    return;
  }
  cl::Event written;
  check(rt->queue.enqueueWriteBuffer(dst, CL_FALSE, dst_offset, bytes, source, nullptr, &written),
        "clEnqueueWriteBuffer", " (", what, ")");
  // Some drivers hold callbacks until the queue is flushed; the loader may be waiting on them.
  check(rt->queue.flush(), "clFlush", " (", what, ")");

  auto pending = std::make_unique<PendingUpload>(PendingUpload{std::move(done), in_flight, what});
  in_flight->begin();
  if (clSetEventCallback(written(), CL_COMPLETE, on_write_complete, pending.get()) == CL_SUCCESS) {
    pending.release();  // the callback owns it now
    return;
  }
  // No callback: wait here so `done` still runs exactly once, after the copy.
  written.wait();
  cl_int status = CL_SUCCESS;
  const cl_int query = written.getInfo(CL_EVENT_COMMAND_EXECUTION_STATUS, &status);
  complete(pending.release(), query == CL_SUCCESS ? status : query);
}

}  // namespace lwload::opencl
