// The xrt backend: AMD's NPUs (Ryzen AI, through the amdxdna driver) and Alveo cards through XRT.
// Discovery lives in discovery.cpp, placements in device.cpp; this file only adapts them to
// lwload::Backend (and to applications that bring their own xrt::device, lwload/xrt.hpp).
#include "backends/builtin.hpp"
#include "backends/device_list.hpp"
#include "backends/xrt/device.hpp"
#include "backends/xrt/discovery.hpp"
#include "lwload/backend_impl.hpp"
#include "lwload/error.hpp"
#include "lwload/xrt.hpp"

namespace lwload {
namespace {

class XrtBackend final : public BackendImpl {
 public:
  std::string_view name() const noexcept override { return "xrt"; }

  std::vector<DeviceInfo> devices() override { return infos_of(xrt_backend::discover()); }

  std::string absent_reason() const override {
    std::string why;
    return xrt_backend::discover(&why).empty() ? why : std::string();
  }

  std::unique_ptr<Device> open(std::uint32_t index, const DeviceOverrides& overrides) override {
    const auto found = xrt_backend::discover();
    const auto& device = device_at(found, index, "xrt", "XRT");
    return xrt_backend::open_device(device.device, device.info, overrides);
  }
};

}  // namespace

std::shared_ptr<Backend> make_xrt_backend() { return std::make_shared<XrtBackend>(); }

std::unique_ptr<Device> open_xrt_device(const ::xrt::device& device, const DeviceOverrides& overrides) {
  if (!device) fail(ErrorCode::usage, "xrt: no XRT device given (an empty xrt::device)");
  return xrt_backend::open_device(device, xrt_backend::describe_adopted(device), overrides);
}

NativeType xrt_bo_type() {
  static const NativeType type = register_native_type("xrt_bo");
  return type;
}

std::optional<XrtTensor> xrt_tensor(const TensorHandle& tensor) {
  if (tensor.native.type != xrt_bo_type() || tensor.native.handle == nullptr) return std::nullopt;
  return XrtTensor{*static_cast<const ::xrt::bo*>(tensor.native.handle), tensor.offset};
}

}  // namespace lwload
