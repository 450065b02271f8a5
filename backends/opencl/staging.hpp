// Pinned staging for discrete devices and the uploads out of it. A slot is a
// CL_MEM_ALLOC_HOST_PTR buffer mapped once for its whole life (the pinned-memory idiom every
// discrete driver recognises for DMA); an upload is a non-blocking clEnqueueWriteBuffer from the
// mapped pointer whose event's CL_COMPLETE callback tells the loader the slot is free again.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>

#include "backends/opencl/runtime.hpp"
#include "lwload/backend.hpp"

namespace lwload::opencl {

class ClStaging final : public StagingBuffer {
 public:
  // Throws Error(out_of_memory) when the driver cannot allocate or pin `bytes`.
  ClStaging(std::shared_ptr<const Runtime> rt, std::uint64_t bytes);
  ~ClStaging() override;
  ClStaging(const ClStaging&) = delete;
  ClStaging& operator=(const ClStaging&) = delete;
  std::span<std::byte> bytes() noexcept override { return {mapped_, size_}; }

 private:
  std::shared_ptr<const Runtime> rt_;
  cl::Buffer mem_;
  std::uint64_t size_;
  std::byte* mapped_ = nullptr;
};

// Counts uploads whose completion callback has not returned yet, so finish() (and the device's
// destructor) can wait for the callbacks themselves, not only for the commands.
class InFlight {
 public:
  void begin();
  void end() noexcept;
  void wait_idle();

 private:
  std::mutex mutex_;
  std::condition_variable idle_;
  std::uint64_t count_ = 0;
};

// Enqueues the copy and arranges for `done` to run once it completes (on the driver's callback
// thread, or here when the driver cannot call back). Throws when the copy cannot be enqueued; then
// `done` is never called.
void enqueue_upload(const std::shared_ptr<const Runtime>& rt, const std::shared_ptr<InFlight>& in_flight,
                    const std::byte* source, const cl::Buffer& dst, std::uint64_t dst_offset,
                    std::uint64_t bytes, TransferDone done);

}  // namespace lwload::opencl
