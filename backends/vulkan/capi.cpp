// lwload_device_from_vulkan: the Vulkan backend's C constructor, written on the public API as a
// backend outside lwload would write its own (c_api_device, lwload/backend_impl.hpp).
#include "lwload/backend_impl.hpp"
#include "lwload/error.hpp"
#include "lwload/lwload.h"
#include "lwload/vulkan.hpp"

extern "C" lwload_device* lwload_device_from_vulkan(void* vk_instance, void* vk_physical_device, void* vk_device,
                                                    uint32_t queue_family, lwload_error** err) {
  return lwload::c_api_device(err, [&] {
    if (!vk_instance) lwload::fail(lwload::ErrorCode::usage, "lwload_device_from_vulkan: vk_instance is NULL");
    if (!vk_physical_device)
      lwload::fail(lwload::ErrorCode::usage, "lwload_device_from_vulkan: vk_physical_device is NULL");
    if (!vk_device) lwload::fail(lwload::ErrorCode::usage, "lwload_device_from_vulkan: vk_device is NULL");
    return lwload::open_vulkan_device(static_cast<VkInstance>(vk_instance),
                                      static_cast<VkPhysicalDevice>(vk_physical_device),
                                      static_cast<VkDevice>(vk_device), queue_family);
  });
}
