// Opening a device: context, queue, overrides, and the extension entry points it will use.
#include "backends/opencl/runtime.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "backends/opencl/cl_error.hpp"
#include "lwload/backend.hpp"

namespace lwload::opencl {

namespace {

// Everything but the context and queue: the device's facts with the overrides applied, and the
// import entry points those facts allow.
std::shared_ptr<Runtime> describe_runtime(const FoundDevice& found, const DeviceOverrides& overrides) {
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

  if (rt->import.arm_import) {
    rt->import_memory_arm = reinterpret_cast<ImportMemoryArmFn>(
        clGetExtensionFunctionAddressForPlatform(rt->platform(), "clImportMemoryARM"));
    if (!rt->import_memory_arm) rt->import.arm_import = false;  // advertised but not exported
  }
  return rt;
}

cl::CommandQueue own_queue(const Runtime& rt) {
  cl_int status = CL_SUCCESS;
  cl::CommandQueue queue(rt.context, rt.device, cl::QueueProperties::None, &status);
  check(status, "clCreateCommandQueue", " for ", rt.info.id());
  return queue;
}

}  // namespace

std::shared_ptr<Runtime> open_runtime(const FoundDevice& found, const DeviceOverrides& overrides) {
  auto rt = describe_runtime(found, overrides);
  cl_int status = CL_SUCCESS;
  rt->context = cl::Context(rt->device, nullptr, nullptr, nullptr, &status);
  check(status, "clCreateContext", " for ", rt->info.id(), " (", rt->info.name, ")");
  rt->queue = own_queue(*rt);
  return rt;
}

std::shared_ptr<Runtime> adopt_runtime(const FoundDevice& found, cl_context context, cl_command_queue queue,
                                       const DeviceOverrides& overrides) {
  auto rt = describe_runtime(found, overrides);
  const std::string who = str("the application's context for ", rt->info.id(), " (", rt->info.name, ")");
  if (context == nullptr) fail(ErrorCode::usage, "opencl: no context given for ", rt->info.id());
  rt->context = cl::Context(context, /*retainObject=*/true);

  std::vector<cl::Device> members;
  check(rt->context.getInfo(CL_CONTEXT_DEVICES, &members), "clGetContextInfo(CL_CONTEXT_DEVICES)", " of ", who);
  if (std::none_of(members.begin(), members.end(), [&](const cl::Device& d) { return d() == rt->device(); }))
    fail(ErrorCode::usage, "opencl: ", rt->info.id(), " (", rt->info.name, ") is not a device of the given context");

  if (queue == nullptr) {
    rt->queue = own_queue(*rt);
    return rt;
  }
  const cl::CommandQueue given(queue, /*retainObject=*/true);
  cl_context queue_context = nullptr;
  cl_device_id queue_device = nullptr;
  cl_command_queue_properties properties = 0;
  check(given.getInfo(CL_QUEUE_CONTEXT, &queue_context), "clGetCommandQueueInfo(CL_QUEUE_CONTEXT)", " of ", who);
  check(given.getInfo(CL_QUEUE_DEVICE, &queue_device), "clGetCommandQueueInfo(CL_QUEUE_DEVICE)", " of ", who);
  check(given.getInfo(CL_QUEUE_PROPERTIES, &properties), "clGetCommandQueueInfo(CL_QUEUE_PROPERTIES)", " of ", who);
  if (queue_context != context || queue_device != rt->device())
    fail(ErrorCode::usage, "opencl: the given queue belongs to another ",
         queue_context != context ? "context" : "device", " than ", rt->info.id(), " in the given context");
  // Uploads, maps and read-backs rely on in-order execution; an out-of-order queue gets a sibling.
  rt->queue = (properties & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE) ? own_queue(*rt) : given;
  return rt;
}

}  // namespace lwload::opencl
