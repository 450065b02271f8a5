// What the devices whose memory is the process's own (host, null) share: an upload is done before
// do_upload returns, so there is nothing in flight to finish, and staging is plain anonymous
// memory.
#pragma once

#include "backends/host/layer.hpp"

#include <cstdint>
#include <memory>
#include <span>
#include <utility>

#include "backends/host/memory.hpp"
#include "lwload/backend_impl.hpp"

namespace lwload::host {

class AnonymousStaging final : public StagingBuffer {
 public:
  explicit AnonymousStaging(std::uint64_t bytes) : memory_(bytes) {}
  std::span<std::byte> bytes() noexcept override { return memory_.bytes(); }

 private:
  AnonymousMemory memory_;
};

class SynchronousDevice : public DeviceImpl {
 public:
  explicit SynchronousDevice(DeviceInfo info) : info_(std::move(info)) {}
  const DeviceInfo& info() const noexcept final { return info_; }
  void finish() final {}

 protected:
  std::unique_ptr<StagingBuffer> do_allocate_staging(std::uint64_t bytes) final {
    return std::make_unique<AnonymousStaging>(bytes);
  }

 private:
  DeviceInfo info_;
};

}  // namespace lwload::host
