// Opening a device: context, queue, overrides, and the extension entry points it will use.
#include "backends/opencl/runtime.hpp"

#include "backends/opencl/cl_error.hpp"
#include "lwload/backend.hpp"

namespace lwload::opencl {

std::shared_ptr<Runtime> open_runtime(const FoundDevice& found, const DeviceOverrides& overrides) {
  auto rt = std::make_shared<Runtime>();
  rt->platform = found.platform;
  rt->device = found.device;
  rt->info = apply_overrides(found.info, overrides);
  rt->import = found.import;

  // A device treated as discrete gets staged loads only: an "import" there would be a hidden
  // copy over the bus (USE_HOST_PTR on a discrete GPU caches the pages in VRAM), and host-visible
  // memory would be host memory reached across PCIe.
  const bool unified = rt->info.memory == MemoryModel::unified;
  const bool import_allowed = unified && overrides.import_host_ptr.value_or(true);
  if (!import_allowed) rt->import = ImportAbility{};
  if (unified && found.info.memory == MemoryModel::discrete) {
    // Forced unified on a device that reported discrete: the user vouches for USE_HOST_PTR.
    rt->import.use_host_ptr = import_allowed;
  }
  DeviceCaps& caps = rt->info.caps;
  caps.import_host_ptr = rt->import.arm_import || rt->import.use_host_ptr || rt->import.system_svm;
  caps.host_visible_alloc = unified;
  rt->account = std::make_shared<MemoryAccount>(caps.device_memory);

  cl_int status = CL_SUCCESS;
  rt->context = cl::Context(rt->device, nullptr, nullptr, nullptr, &status);
  check(status, "clCreateContext", " for ", rt->info.id(), " (", rt->info.name, ")");
  rt->queue = cl::CommandQueue(rt->context, rt->device, cl::QueueProperties::None, &status);
  check(status, "clCreateCommandQueue", " for ", rt->info.id());

  if (rt->import.arm_import) {
    rt->import_memory_arm = reinterpret_cast<ImportMemoryArmFn>(
        clGetExtensionFunctionAddressForPlatform(rt->platform(), "clImportMemoryARM"));
    if (!rt->import_memory_arm) rt->import.arm_import = false;  // advertised but not exported
  }
  return rt;
}

}  // namespace lwload::opencl
