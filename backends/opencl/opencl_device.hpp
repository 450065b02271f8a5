// lwload::Device for one OpenCL device: allocation (device-local / host-visible), zero-copy
// import, pinned staging and asynchronous uploads. See import.hpp and staging.hpp for the details
// of each path.
#pragma once

#include "backends/opencl/layer.hpp"

#include <memory>
#include <string>

#include "backends/opencl/session.hpp"
#include "backends/opencl/staging.hpp"
#include "lwload/backend.hpp"

namespace lwload::opencl {

class OpenClDevice final : public Device {
 public:
  explicit OpenClDevice(std::shared_ptr<Session> session);
  ~OpenClDevice() override;

  const DeviceInfo& info() const noexcept override { return session_->info; }
  std::unique_ptr<DeviceBuffer> allocate_memory(std::uint64_t bytes, MemoryPlace place) override;
  ImportResult import_range(std::span<const std::byte> range) override;
  std::unique_ptr<StagingBuffer> allocate_staging_memory(std::uint64_t bytes) override;
  void finish() override;

  // The context and queue, for applications that run kernels on what lwload loaded.
  const cl::Context& context() const noexcept { return session_->context; }
  const cl::CommandQueue& queue() const noexcept { return session_->queue; }
  const cl::Device& cl_device() const noexcept { return session_->device; }

 private:
  void start_upload(StagingBuffer& staging, std::uint64_t src_offset, DeviceBuffer& dst, std::uint64_t dst_offset,
                    std::uint64_t bytes, TransferDone done) override;

  std::shared_ptr<const Session> session_;
  CompletionQueue completions_;  // last: drained before the session goes
};

}  // namespace lwload::opencl
