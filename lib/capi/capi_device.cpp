// C API devices: opened by spec, or adopted from the application's own context in each API this
// build has (the others answer LWLOAD_UNSUPPORTED).
#include "capi/capi_objects.hpp"
#include "lwload/backend.hpp"
#include "lwload/cuda.hpp"
#include "lwload/error.hpp"

#if LWLOAD_HAVE_OPENCL
#include "lwload/opencl.hpp"
#endif
#if LWLOAD_HAVE_LEVEL_ZERO
#include "lwload/level_zero.hpp"
#endif
#if LWLOAD_HAVE_VULKAN
#include "lwload/vulkan.hpp"
#endif

namespace {

using lwload::capi::guarded;
using lwload::capi::require;

template <typename Open>
lwload_device* wrap(lwload_error** err, Open&& open) {
  return guarded(err, static_cast<lwload_device*>(nullptr), [&] {
    std::unique_ptr<lwload::Device> device = open();
    std::string id = device->info().id();
    return new lwload_device{std::move(device), std::move(id)};
  });
}

[[noreturn, maybe_unused]] void not_built(const char* api) {
  lwload::fail(lwload::ErrorCode::unsupported, "this liblwload was built without ", api);
}

}  // namespace

extern "C" {

lwload_device* lwload_device_open(const char* spec, lwload_error** err) {
  return wrap(err, [&] {
    require(spec, "lwload_device_open", "spec");
    return lwload::open_device(spec);
  });
}

lwload_device* lwload_device_from_opencl(void* context, void* device, void* queue, lwload_error** err) {
  return wrap(err, [&]() -> std::unique_ptr<lwload::Device> {
#if LWLOAD_HAVE_OPENCL
    require(context, "lwload_device_from_opencl", "cl_context");
    require(device, "lwload_device_from_opencl", "cl_device_id");
    return lwload::open_opencl_device(static_cast<cl_context>(context), static_cast<cl_device_id>(device),
                                      static_cast<cl_command_queue>(queue));
#else
    (void)context, (void)device, (void)queue;
    not_built("OpenCL");
#endif
  });
}

lwload_device* lwload_device_from_level_zero(void* ze_driver, void* ze_context, void* ze_device, lwload_error** err) {
  return wrap(err, [&]() -> std::unique_ptr<lwload::Device> {
#if LWLOAD_HAVE_LEVEL_ZERO
    require(ze_context, "lwload_device_from_level_zero", "ze_context");
    return lwload::open_level_zero_device(static_cast<ze_driver_handle_t>(ze_driver),
                                          static_cast<ze_context_handle_t>(ze_context),
                                          static_cast<ze_device_handle_t>(ze_device));
#else
    (void)ze_driver, (void)ze_context, (void)ze_device;
    not_built("Level Zero");
#endif
  });
}

lwload_device* lwload_device_from_vulkan(void* vk_instance, void* vk_physical_device, void* vk_device,
                                         uint32_t queue_family, lwload_error** err) {
  return wrap(err, [&]() -> std::unique_ptr<lwload::Device> {
#if LWLOAD_HAVE_VULKAN
    require(vk_instance, "lwload_device_from_vulkan", "vk_instance");
    require(vk_physical_device, "lwload_device_from_vulkan", "vk_physical_device");
    require(vk_device, "lwload_device_from_vulkan", "vk_device");
    return lwload::open_vulkan_device(static_cast<VkInstance>(vk_instance),
                                      static_cast<VkPhysicalDevice>(vk_physical_device),
                                      static_cast<VkDevice>(vk_device), queue_family);
#else
    (void)vk_instance, (void)vk_physical_device, (void)vk_device, (void)queue_family;
    not_built("Vulkan");
#endif
  });
}

lwload_device* lwload_device_from_cuda(void* cu_context, void* cu_stream, uint32_t cu_device_index,
                                       lwload_error** err) {
  return wrap(err, [&] {
    require(cu_context, "lwload_device_from_cuda", "cu_context");
    return lwload::open_cuda_device(cu_context, cu_stream, cu_device_index);
  });
}

void lwload_device_free(lwload_device* d) { delete d; }

const char* lwload_device_id(const lwload_device* d) { return d ? d->id.c_str() : ""; }

const char* lwload_device_name(const lwload_device* d) { return d ? d->device->info().name.c_str() : ""; }

}  // extern "C"
