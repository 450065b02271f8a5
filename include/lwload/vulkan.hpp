// Vulkan for applications: bring your own instance / physical device / device / queue family
// (lwload allocates, imports and copies in them and never destroys them), and typed access to
// where a tensor lives: its VkBuffer and VkDeviceMemory, the tensor starting `offset` bytes in.
#pragma once

// Layer backend_vulkan's public header: refused below backend_vulkan in lwload's build (docs/ARCHITECTURE.md,
// "Layers").
#if defined(LWLOAD_LAYER_CORE) && !defined(LWLOAD_LAYER_BACKEND_VULKAN)
#error \
    "lwload layering: include/lwload/vulkan.hpp (layer backend_vulkan) is not below this layer (the layer table in meson.build says what each layer may include)"
#endif

#include <vulkan/vulkan.h>

#include <cstdint>
#include <memory>
#include <optional>

#include "lwload/backend.hpp"
#include "lwload/export.h"
#include "lwload/tensor_handle.hpp"

namespace lwload {

// The application's Vulkan objects a device works in. Imports need VK_EXT_external_memory_host
// enabled on `device`; without it zero_copy is off.
struct VulkanContext {
  VkInstance instance = VK_NULL_HANDLE;
  VkPhysicalDevice physical = VK_NULL_HANDLE;  // one of the instance's
  VkDevice device = VK_NULL_HANDLE;            // created from `physical`
  std::uint32_t queue_family = 0;              // a family of `device` whose queue 0 takes transfers
};
LWLOAD_API std::unique_ptr<Device> open_vulkan_device(const VulkanContext& context,
                                                      const DeviceOverrides& overrides = {});
// The same, the objects one by one.
LWLOAD_API std::unique_ptr<Device> open_vulkan_device(VkInstance instance, VkPhysicalDevice physical, VkDevice device,
                                                      std::uint32_t queue_family,
                                                      const DeviceOverrides& overrides = {});

// The handle type of Vulkan buffers: a VkBuffer ("vk_buffer"); vulkan_tensor() gives its memory too.
LWLOAD_API NativeType vk_buffer_type();

struct VulkanTensor {
  VkBuffer buffer;
  VkDeviceMemory memory;
  std::uint64_t offset;
};
// nullopt when the tensor is not on a Vulkan device (or was skipped).
LWLOAD_API std::optional<VulkanTensor> vulkan_tensor(const TensorHandle& tensor);

}  // namespace lwload
