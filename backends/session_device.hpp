// What the devices of the GPU backends (CUDA, Level Zero, OpenCL, Vulkan) share: their DeviceInfo, the
// session (the driver's objects) that every buffer keeps alive too and that makes them
// (session->allocate(bytes, place), session->import_host(range)), staging slots of that backend's
// kind, and the engine that completes their uploads (InFlight, with wait_idle()). finish() and
// destruction wait for that engine, and it goes before the session.
// A device of such a backend writes only its do_upload() (OpenCL: and a finish() that drains its
// queue first).
#pragma once

#include "backends/layer.hpp"

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <utility>

#include "lwload/backend_impl.hpp"
#include "lwload/error.hpp"

namespace lwload {

template <typename Session, typename Staging, typename InFlight>
class SessionDevice : public DeviceImpl {
 public:
  // `in_flight_args` make the completion engine.
  template <typename... InFlightArgs>
  SessionDevice(DeviceInfo info, std::shared_ptr<Session> session, InFlightArgs&&... in_flight_args)
      : info_(std::move(info)),
        session_(std::move(session)),
        in_flight_(std::forward<InFlightArgs>(in_flight_args)...) {}
  ~SessionDevice() override { in_flight_.wait_idle(); }

  const DeviceInfo& info() const noexcept final { return info_; }
  void finish() override { in_flight_.wait_idle(); }

 protected:
  std::unique_ptr<StagingBuffer> do_allocate_staging(std::uint64_t bytes) final {
    return std::make_unique<Staging>(session_, bytes);
  }
  std::unique_ptr<DeviceBuffer> do_allocate(std::uint64_t bytes, MemoryPlace place) final {
    return session_->allocate(bytes, place);
  }
  ImportResult do_import_host(std::span<const std::byte> range) final { return session_->import_host(range); }

  const DeviceInfo info_;
  const std::shared_ptr<Session> session_;
  InFlight in_flight_;  // after the session: drained before the session goes

  // An upload's buffer as this backend's `Own` kind; one of another device is a usage error that
  // says which `upload` it was.
  template <typename Own, typename Any>
  Own& own(Any& buffer, std::string_view upload) const {
    auto* own = dynamic_cast<Own*>(&buffer);
    if (!own) fail(ErrorCode::usage, session_->label(), ": ", upload, " of another device");
    return *own;
  }
};

}  // namespace lwload
