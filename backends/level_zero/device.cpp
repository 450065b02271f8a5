// The Level Zero Device: which memory each placement gets, and bounds checks before the driver
// sees a pointer. Driver failures become lwload errors naming the device, the call and the size.
#include "backends/level_zero/device.hpp"

#include "backends/level_zero/buffers.hpp"
#include "backends/level_zero/session.hpp"
#include "backends/level_zero/transfers.hpp"
#include "backends/session_device.hpp"
#include "lwload/error.hpp"

namespace lwload::level_zero {
namespace {

// Copies in flight at once; more than a staging ring has slots, so the ring is the real limit.
constexpr std::uint32_t kMaxInFlight = 64;

void* offset_ptr(void* base, std::uint64_t offset) {
  return reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(base) + offset);
}

class ZeDevice final : public SessionDevice<Session, ZeStaging, TransferQueue> {
 public:
  ZeDevice(DeviceInfo info, std::shared_ptr<Session> session)
      : SessionDevice(std::move(info), session, session, kMaxInFlight) {}

 protected:
  void do_upload(StagingBuffer& staging, std::uint64_t src_offset, DeviceBuffer& dst, std::uint64_t dst_offset,
                 std::uint64_t bytes, TransferDone done) override {
    const auto src = staging.bytes();
    const NativeHandle target = dst.native();
    if (target.type != ze_ptr_type())
      fail(ErrorCode::usage, session_->label(), ": upload target is a '", native_type_name(target.type),
           "' buffer, not a Level Zero one");
    if (bytes == 0) {
      done(nullptr);
      return;
    }
    in_flight_.submit(offset_ptr(target.handle, dst_offset), src.data() + src_offset, static_cast<std::size_t>(bytes),
                      std::move(done));
  }
};

}  // namespace

std::unique_ptr<Device> open_device(const FoundDevice& found, const DeviceOverrides& overrides) {
  return std::make_unique<ZeDevice>(apply_overrides(found.info, overrides), Session::open(found));
}

std::unique_ptr<Device> adopt_device(const FoundDevice& found, ze_context_handle_t context,
                                     const DeviceOverrides& overrides) {
  return std::make_unique<ZeDevice>(apply_overrides(found.info, overrides), Session::adopt(found, context));
}

}  // namespace lwload::level_zero
