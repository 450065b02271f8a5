// The XRT Device: which memory each placement gets (the session's buffers) and the upload, which
// XRT performs synchronously: the slot's bytes synced to the device, then copied there into the
// destination (xrt::bo::copy), so done() runs before do_upload returns.
#include "backends/xrt/device.hpp"

#include "backends/session_device.hpp"
#include "backends/xrt/buffers.hpp"
#include "backends/xrt/check.hpp"
#include "backends/xrt/session.hpp"
#include "lwload/error.hpp"

namespace lwload::xrt_backend {
namespace {

class XrtDevice final : public SessionDevice<Session, XrtStaging, NothingInFlight> {
 public:
  XrtDevice(DeviceInfo info, std::shared_ptr<Session> session) : SessionDevice(std::move(info), std::move(session)) {}

 protected:
  void do_upload(StagingBuffer& staging, std::uint64_t src_offset, DeviceBuffer& dst, std::uint64_t dst_offset,
                 std::uint64_t bytes, TransferDone done) override {
    auto& slot = own<XrtStaging>(staging, "upload from a staging slot").buffer();
    auto& target = own<XrtBuffer>(dst, "upload into a buffer");
    if (bytes != 0) {
      const auto n = static_cast<std::size_t>(bytes);
      call(session_->label(), "xrt::bo::copy", str(bytes, " bytes, upload"), [&] {
        slot.bo().sync(XCL_BO_SYNC_BO_TO_DEVICE, n, static_cast<std::size_t>(src_offset));
        target.bo().copy(slot.bo(), n, static_cast<std::size_t>(src_offset), static_cast<std::size_t>(dst_offset));
      });
    }
    done(nullptr);
  }
};

}  // namespace

std::unique_ptr<Device> open_device(::xrt::device device, const DeviceInfo& info, const DeviceOverrides& overrides) {
  DeviceInfo opened = apply_overrides(info, overrides);
  auto session = Session::open(std::move(device), opened);
  return std::make_unique<XrtDevice>(std::move(opened), std::move(session));
}

}  // namespace lwload::xrt_backend
