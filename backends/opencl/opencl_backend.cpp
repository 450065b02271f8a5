// The "opencl" backend: lists every OpenCL device once (discovery is cached: devices do not come
// and go while a process runs) and opens them by index.
#include <mutex>

#include "backends/builtin.hpp"
#include "backends/opencl/discovery.hpp"
#include "backends/opencl/opencl_device.hpp"
#include "lwload/error.hpp"

namespace lwload {
namespace {

class OpenClBackend final : public Backend {
 public:
  std::string_view name() const noexcept override { return "opencl"; }

  std::vector<DeviceInfo> devices() override {
    std::vector<DeviceInfo> infos;
    for (const auto& found : found_devices()) infos.push_back(found.info);
    return infos;
  }

  std::unique_ptr<Device> open(std::uint32_t index, const DeviceOverrides& overrides) override {
    const auto& found = found_devices();
    if (index >= found.size())
      fail(ErrorCode::usage, "device 'opencl:", index, "': OpenCL has ", found.size(), " device(s)");
    return std::make_unique<opencl::OpenClDevice>(opencl::open_runtime(found[index], overrides));
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

}  // namespace lwload
