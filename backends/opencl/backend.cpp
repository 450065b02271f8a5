// The "opencl" backend: lists every OpenCL device once (discovery is cached: devices do not come
// and go while a process runs) and opens them by index; open_opencl_device adopts an application's
// own context instead.
#include <mutex>

#include "backends/builtin.hpp"
#include "lwload/backend_impl.hpp"
#include "backends/device_list.hpp"
#include "backends/opencl/device.hpp"
#include "backends/opencl/discovery.hpp"
#include "lwload/error.hpp"
#include "lwload/opencl.hpp"

namespace lwload {
namespace {

class OpenClBackend final : public BackendImpl {
 public:
  std::string_view name() const noexcept override { return "opencl"; }

  std::vector<DeviceInfo> devices() override { return infos_of(found_devices()); }

  std::unique_ptr<Device> open(std::uint32_t index, const DeviceOverrides& overrides) override {
    const auto& found = found_devices();
    if (index >= found.size())
      fail(ErrorCode::usage, "device 'opencl:", index, "': OpenCL has ", found.size(), " device(s)");
    return std::make_unique<opencl::OpenClDevice>(opencl::open_session(found[index], overrides));
  }

 private:
  const std::vector<opencl::FoundDevice>& found_devices() {
    const std::lock_guard lock(mutex_);
    if (!discovered_) {
      found_ = opencl::discover_devices();
      discovered_ = true;
    }
    return found_;
  }

  std::mutex mutex_;
  bool discovered_ = false;
  std::vector<opencl::FoundDevice> found_;
};

}  // namespace

std::shared_ptr<Backend> make_opencl_backend() { return std::make_shared<OpenClBackend>(); }

std::unique_ptr<Device> open_opencl_device(cl_context context, cl_device_id device, cl_command_queue queue,
                                           const DeviceOverrides& overrides) {
  if (device == nullptr) fail(ErrorCode::usage, "opencl: no device given");
  const opencl::FoundDevice found = opencl::describe_device(device);
  return std::make_unique<opencl::OpenClDevice>(opencl::adopt_session(found, context, queue, overrides));
}

NativeType cl_mem_type() {
  static const NativeType type = register_native_type("cl_mem");
  return type;
}

NativeType cl_svm_ptr_type() {
  static const NativeType type = register_native_type("cl_svm_ptr");
  return type;
}

std::optional<OpenClTensor> opencl_tensor(const TensorHandle& tensor) {
  if (tensor.native.type != cl_mem_type()) return std::nullopt;
  return OpenClTensor{static_cast<cl_mem>(tensor.native.handle), tensor.offset};
}

}  // namespace lwload
