// Instance-level Vulkan: lwload's own instance (Vulkan 1.1, with VK_LAYER_KHRONOS_validation when
// LWLOAD_VULKAN_VALIDATION=1 and the layer is installed), physical devices and their facts.
#pragma once

#include "backends/vulkan/layer.hpp"

#include <vulkan/vulkan.h>

#include <memory>
#include <string_view>
#include <vector>

namespace lwload::vulkan {

// lwload's own instance, made once by the backend and shared with the sessions opened on it:
// destroyed when the last of them lets go (listing devices makes none of its own).
class Instance {
 public:
  static std::shared_ptr<Instance> create();  // throws Error(device) when no loader/ICD can make one
  ~Instance();
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;
  VkInstance get() const noexcept { return instance_; }

 private:
  explicit Instance(VkInstance instance) : instance_(instance) {}
  VkInstance instance_;
};
std::vector<VkPhysicalDevice> physical_devices(VkInstance instance);
bool has_device_extension(VkPhysicalDevice physical, std::string_view name);
// A queue family that can copy buffers (transfer, compute or graphics all can).
std::uint32_t transfer_family(VkPhysicalDevice physical);

}  // namespace lwload::vulkan
