// One opened XRT device: the xrt::device every buffer keeps alive (shared_ptr), and the memory it
// hands out (Session::allocate, Session::import_host, defined in buffers.cpp) as XRT buffer
// objects. XRT's buffer calls are synchronous, so nothing is ever in flight.
#pragma once

#include "backends/xrt/layer.hpp"

#include <xrt/xrt_device.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "lwload/backend.hpp"

namespace lwload::xrt_backend {

class XrtBuffer;  // buffers.hpp

class Session : public std::enable_shared_from_this<Session> {
 public:
  // `device` is lwload's own or the application's (xrt::device is a shared handle: lwload holds a
  // reference and closes nothing of the application's).
  static std::shared_ptr<Session> open(::xrt::device device, const DeviceInfo& info);
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const ::xrt::device& device() const noexcept { return device_; }
  bool unified() const noexcept { return unified_; }
  // "xrt:0 (name)", the prefix of every error message.
  const std::string& label() const noexcept { return label_; }

  // device_local: a device-only buffer object (XRT_BO_FLAGS_DEV_ONLY), filled by device-side copies;
  // host_visible: a buffer object the host maps (host-only on unified devices, which is how AMD's
  // NPUs share host memory; normal on cards).
  std::unique_ptr<XrtBuffer> allocate(std::uint64_t bytes, MemoryPlace place);
  // A user-pointer buffer object over `range` (whole pages, which Device::import_host holds it to),
  // synced to the device; declined with XRT's words when the driver refuses the pages.
  ImportResult import_host(std::span<const std::byte> range);

 private:
  Session() = default;
  ::xrt::device device_;
  bool unified_ = true;
  std::string label_;
};

// Nothing in flight: each upload is done when do_upload returns (SessionDevice's completion engine).
struct NothingInFlight {
  void wait_idle() noexcept {}
};

}  // namespace lwload::xrt_backend
