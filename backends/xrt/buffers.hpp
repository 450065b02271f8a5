// XRT buffer objects as lwload buffers: device-only buffers (staged), host-mapped buffers (direct,
// and the staging slots), user-pointer buffers over file pages (zero-copy) and sub-buffers (views).
// The session makes them (Session::allocate, Session::import_host, in buffers.cpp); an
// xrt::bo releases itself, after its sub-buffers.
#pragma once

#include "backends/xrt/layer.hpp"

#include <xrt/xrt_bo.h>

#include <cstdint>
#include <memory>
#include <span>

#include "backends/session_buffer.hpp"
#include "backends/xrt/session.hpp"
#include "lwload/xrt.hpp"

namespace lwload::xrt_backend {

class XrtBuffer final : public SessionBuffer<Session> {
 public:
  // The handle is the buffer object itself (const xrt::bo*), valid as long as this buffer.
  NativeHandle native() const noexcept override { return {xrt_bo_type(), const_cast<::xrt::bo*>(&bo_)}; }
  // The host's writes reach the device by a sync, as XRT asks of every buffer the host writes.
  void end_host_write() override;

  ::xrt::bo& bo() noexcept { return bo_; }

 protected:
  // What the device holds: host-visible bytes synced back from the device first (a device-side
  // copy into them reaches the host only so), imported pages as the file's, device-only bytes
  // through read_device.
  void do_read_back(std::uint64_t offset, std::span<std::byte> dst) override;
  // Device-only bytes come back through a host-mapped buffer: copied on the device, then synced.
  void read_device(std::uint64_t offset, std::span<std::byte> dst) override;
  // A sub-buffer: XRT's own view of [offset, offset + size), addressed by the device like its
  // parent; none of a device-only buffer (XRT 2.13 refuses those).
  std::unique_ptr<DeviceBuffer> do_view(std::uint64_t offset, std::uint64_t size) override;

 private:
  friend class Session;  // the only maker
  XrtBuffer(std::shared_ptr<Session> session, BufferKind kind, ::xrt::bo bo, std::byte* host, std::uint64_t size)
      : SessionBuffer(std::move(session), size, kind, "xrt_userptr"), bo_(std::move(bo)) {
    host_ = host;
  }

  ::xrt::bo bo_;
};

// A staging slot: a host-mapped buffer object, synced and then copied on the device into the
// device-only buffer (Device::upload).
using XrtStaging = HostVisibleStaging<XrtBuffer>;

}  // namespace lwload::xrt_backend
