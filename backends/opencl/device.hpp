// lwload::Device for one OpenCL device: allocation (device-local / host-visible), zero-copy
// import, pinned staging and asynchronous uploads. A SessionDevice like the other GPU backends':
// it writes only its upload (and a finish() that drains the queue first); its session allocates
// (buffers.cpp) and imports (import.cpp); staging is in transfers.cpp.
#pragma once

#include "backends/opencl/layer.hpp"

#include <memory>
#include <string>

#include "backends/completion_queue.hpp"
#include "backends/opencl/buffers.hpp"
#include "backends/opencl/session.hpp"
#include "backends/opencl/transfers.hpp"
#include "backends/session_device.hpp"

namespace lwload::opencl {

class OpenClDevice final : public SessionDevice<const Session, ClStaging, CompletionQueue> {
 public:
  explicit OpenClDevice(std::shared_ptr<const Session> session);

  // clFinish (its error is the device's), then every upload's completion.
  void finish() override;

  // The context and queue, for applications that run kernels on what lwload loaded.
  const cl::Context& context() const noexcept { return session_->context; }
  const cl::CommandQueue& queue() const noexcept { return session_->queue; }
  const cl::Device& cl_device() const noexcept { return session_->device; }

 protected:
  void do_upload(StagingBuffer& staging, std::uint64_t src_offset, DeviceBuffer& dst, std::uint64_t dst_offset,
                 std::uint64_t bytes, TransferDone done) override;
};

}  // namespace lwload::opencl
