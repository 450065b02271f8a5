// The level_zero backend: Intel GPUs and NPUs through the Level Zero loader. Discovery lives in
// discovery.cpp, placements in device.cpp; this file only adapts them to lwload::Backend (and to
// applications that bring their own context, lwload/level_zero.hpp).
#include "backends/builtin.hpp"
#include "lwload/backend_impl.hpp"
#include "backends/device_list.hpp"
#include "backends/level_zero/device.hpp"
#include "backends/level_zero/discovery.hpp"
#include "lwload/error.hpp"
#include "lwload/level_zero.hpp"

namespace lwload {
namespace {

class LevelZeroBackend final : public BackendImpl {
 public:
  std::string_view name() const noexcept override { return "level_zero"; }

  std::vector<DeviceInfo> devices() override { return infos_of(level_zero::discover()); }

  std::unique_ptr<Device> open(std::uint32_t index, const DeviceOverrides& overrides) override {
    return level_zero::open_device(device_at(level_zero::discover(), index, "level_zero", "Level Zero"), overrides);
  }
};

}  // namespace

std::shared_ptr<Backend> make_level_zero_backend() { return std::make_shared<LevelZeroBackend>(); }

std::unique_ptr<Device> open_level_zero_device(ze_driver_handle_t driver, ze_context_handle_t context,
                                               ze_device_handle_t device, const DeviceOverrides& overrides) {
  for (const auto& found : level_zero::discover())
    if (found.driver == driver && found.device == device) return level_zero::adopt_device(found, context, overrides);
  fail(ErrorCode::usage, "level_zero: the given device is not a device of the given driver (zeDeviceGet)");
}

NativeType ze_ptr_type() {
  static const NativeType type = register_native_type("ze_ptr");
  return type;
}

std::optional<LevelZeroTensor> level_zero_tensor(const TensorHandle& tensor) {
  if (tensor.native.type != ze_ptr_type()) return std::nullopt;
  return LevelZeroTensor{tensor.native.handle, tensor.offset};
}

}  // namespace lwload
