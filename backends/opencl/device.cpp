// Allocation and transfer entry points of an OpenCL device.
#include "backends/opencl/device.hpp"

#include "backends/opencl/check.hpp"

namespace lwload::opencl {

OpenClDevice::OpenClDevice(std::shared_ptr<const Session> session) : SessionDevice(session->info, session) {}

void OpenClDevice::do_upload(StagingBuffer& staging, std::uint64_t src_offset, DeviceBuffer& dst,
                             std::uint64_t dst_offset, std::uint64_t bytes, TransferDone done) {
  auto& source = own<ClStaging>(staging, "upload from a staging buffer");
  auto& target = own<ClBuffer>(dst, "upload into a buffer");
  in_flight_.push(enqueue_upload(session_, source.bytes().data() + src_offset, target.mem(), dst_offset, bytes),
                  std::move(done));
}

void OpenClDevice::finish() {
  check(session_->queue.finish(), "clFinish", " on ", session_->info.id());
  SessionDevice::finish();
}

}  // namespace lwload::opencl
