// Pinned staging for discrete devices and the uploads out of it. A slot is a
// CL_MEM_ALLOC_HOST_PTR buffer mapped once for its whole life (the pinned-memory idiom every
// discrete driver recognises for DMA); an upload is a non-blocking clEnqueueWriteBuffer from the
// mapped pointer whose event's CL_COMPLETE callback tells the loader the slot is free again.
#pragma once

#include "backends/opencl/layer.hpp"

#include <cstdint>
#include <memory>

#include "backends/completion_queue.hpp"
#include "backends/opencl/session.hpp"
#include "lwload/backend.hpp"

namespace lwload::opencl {

class ClStaging final : public StagingBuffer {
 public:
  // Throws Error(out_of_memory) when the driver cannot allocate or pin `bytes`.
  ClStaging(std::shared_ptr<const Session> session, std::uint64_t bytes);
  ~ClStaging() override;
  ClStaging(const ClStaging&) = delete;
  ClStaging& operator=(const ClStaging&) = delete;
  std::span<std::byte> bytes() noexcept override { return {mapped_, static_cast<std::size_t>(size_)}; }

 private:
  std::shared_ptr<const Session> session_;
  cl::Buffer mem_;
  std::uint64_t size_;
  std::byte* mapped_ = nullptr;
};

// Enqueues the copy (non-blocking, flushed) and returns what waits for it: the shared
// CompletionQueue runs that wait and then the upload's done, in submission order — the order an
// in-order queue completes them. Throws when the copy cannot be enqueued.
CompletionQueue::Wait enqueue_upload(const std::shared_ptr<const Session>& session, const std::byte* source,
                                     const cl::Buffer& dst, std::uint64_t dst_offset, std::uint64_t bytes);

}  // namespace lwload::opencl
