// Opening a device: context, queue, overrides, and the extension entry points it will use.
#include "backends/opencl/session.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "backends/opencl/check.hpp"
#include "lwload/backend_impl.hpp"

namespace lwload::opencl {

namespace {

// Everything but the context and queue: the device's facts with the overrides applied, and the
// import entry points those facts allow.
std::shared_ptr<Session> describe_session(const FoundDevice& found, const DeviceOverrides& overrides) {
  auto session = std::make_shared<Session>();
  session->platform = found.platform;
  session->device = found.device;
  session->info = apply_overrides(found.info, overrides);
  session->import = found.import;

  // A device treated as discrete gets staged loads only: an "import" there would be a hidden
  // copy over the bus (USE_HOST_PTR on a discrete GPU caches the pages in VRAM), and host-visible
  // memory would be host memory reached across PCIe.
  const bool unified = session->info.memory == MemoryModel::unified;
  const bool import_allowed = unified && overrides.import_host_ptr.value_or(true);
  if (!import_allowed) session->import = ImportAbility{};
  if (unified && found.info.memory == MemoryModel::discrete) {
    // Forced unified on a device that reported discrete: the user vouches for USE_HOST_PTR.
    session->import.use_host_ptr = import_allowed;
  }
  DeviceCaps& caps = session->info.caps;
  caps.import_host_ptr = session->import.arm_import || session->import.use_host_ptr || session->import.system_svm;
  caps.host_visible_alloc = unified;
  session->account = std::make_shared<MemoryAccount>(caps.device_memory);

  if (session->import.arm_import) {
    session->import_memory_arm = reinterpret_cast<ImportMemoryArmFn>(
        clGetExtensionFunctionAddressForPlatform(session->platform(), "clImportMemoryARM"));
    if (!session->import_memory_arm) session->import.arm_import = false;  // advertised but not exported
  }
  return session;
}

cl::CommandQueue own_queue(const Session& session) {
  cl_int status = CL_SUCCESS;
  cl::CommandQueue queue(session.context, session.device, cl::QueueProperties::None, &status);
  check(status, "clCreateCommandQueue", " for ", session.info.id());
  return queue;
}

}  // namespace

std::shared_ptr<Session> open_session(const FoundDevice& found, const DeviceOverrides& overrides) {
  auto session = describe_session(found, overrides);
  cl_int status = CL_SUCCESS;
  session->context = cl::Context(session->device, nullptr, nullptr, nullptr, &status);
  check(status, "clCreateContext", " for ", session->info.id(), " (", session->info.name, ")");
  session->queue = own_queue(*session);
  return session;
}

std::shared_ptr<Session> adopt_session(const FoundDevice& found, cl_context context, cl_command_queue queue,
                                       const DeviceOverrides& overrides) {
  auto session = describe_session(found, overrides);
  const std::string who = str("the application's context for ", session->info.id(), " (", session->info.name, ")");
  if (context == nullptr) fail(ErrorCode::usage, "opencl: no context given for ", session->info.id());
  session->context = cl::Context(context, /*retainObject=*/true);

  std::vector<cl::Device> members;
  check(session->context.getInfo(CL_CONTEXT_DEVICES, &members), "clGetContextInfo(CL_CONTEXT_DEVICES)", " of ", who);
  if (std::none_of(members.begin(), members.end(), [&](const cl::Device& d) { return d() == session->device(); }))
    fail(ErrorCode::usage, "opencl: ", session->info.id(), " (", session->info.name,
         ") is not a device of the given context");

  if (queue == nullptr) {
    session->queue = own_queue(*session);
    return session;
  }
  const cl::CommandQueue given(queue, /*retainObject=*/true);
  cl_context queue_context = nullptr;
  cl_device_id queue_device = nullptr;
  cl_command_queue_properties properties = 0;
  check(given.getInfo(CL_QUEUE_CONTEXT, &queue_context), "clGetCommandQueueInfo(CL_QUEUE_CONTEXT)", " of ", who);
  check(given.getInfo(CL_QUEUE_DEVICE, &queue_device), "clGetCommandQueueInfo(CL_QUEUE_DEVICE)", " of ", who);
  check(given.getInfo(CL_QUEUE_PROPERTIES, &properties), "clGetCommandQueueInfo(CL_QUEUE_PROPERTIES)", " of ", who);
  if (queue_context != context || queue_device != session->device())
    fail(ErrorCode::usage, "opencl: the given queue belongs to another ",
         queue_context != context ? "context" : "device", " than ", session->info.id(), " in the given context");
  // Uploads, maps and read-backs rely on in-order execution; an out-of-order queue gets a sibling.
  session->queue = (properties & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE) ? own_queue(*session) : given;
  return session;
}

}  // namespace lwload::opencl
