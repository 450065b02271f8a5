// Instance-level Vulkan: lwload's own instance (Vulkan 1.1, with VK_LAYER_KHRONOS_validation when
// LWLOAD_VULKAN_VALIDATION=1 and the layer is installed), physical devices and their facts.
#pragma once

#include <vulkan/vulkan.h>

#include <string_view>
#include <vector>

namespace lwload::vk {

VkInstance create_instance();  // throws Error(device) when no Vulkan loader/ICD can make one
std::vector<VkPhysicalDevice> physical_devices(VkInstance instance);
bool has_device_extension(VkPhysicalDevice physical, std::string_view name);
// A queue family that can copy buffers (transfer, compute or graphics all can).
std::uint32_t transfer_family(VkPhysicalDevice physical);

}  // namespace lwload::vk
