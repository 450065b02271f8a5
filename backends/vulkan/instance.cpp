#include "backends/vulkan/instance.hpp"

#include <cstdlib>
#include <cstring>
#include <string>

#include "backends/vulkan/session.hpp"
#include "lwload/error.hpp"

namespace lwload::vulkan {
namespace {

bool has_layer(const char* name) {
  std::uint32_t count = 0;
  vkEnumerateInstanceLayerProperties(&count, nullptr);
  std::vector<VkLayerProperties> layers(count);
  vkEnumerateInstanceLayerProperties(&count, layers.data());
  for (const auto& l : layers)
    if (std::strcmp(l.layerName, name) == 0) return true;
  return false;
}

}  // namespace

std::shared_ptr<Instance> Instance::create() {
  auto app = make<VkApplicationInfo>(VK_STRUCTURE_TYPE_APPLICATION_INFO);
  app.pApplicationName = "lwload";
  app.apiVersion = VK_API_VERSION_1_1;
  auto info = make<VkInstanceCreateInfo>(VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO);
  info.pApplicationInfo = &app;
  const char* validation = "VK_LAYER_KHRONOS_validation";
  const char* wanted = std::getenv("LWLOAD_VULKAN_VALIDATION");
  if (wanted && std::string(wanted) == "1" && has_layer(validation)) {
    info.enabledLayerCount = 1;
    info.ppEnabledLayerNames = &validation;
  }
  VkInstance instance = VK_NULL_HANDLE;
  check(vkCreateInstance(&info, nullptr, &instance), "vulkan", "vkCreateInstance");
  return std::shared_ptr<Instance>(new Instance(instance));
}

Instance::~Instance() { vkDestroyInstance(instance_, nullptr); }

std::vector<VkPhysicalDevice> physical_devices(VkInstance instance) {
  std::uint32_t count = 0;
  check(vkEnumeratePhysicalDevices(instance, &count, nullptr), "vulkan", "vkEnumeratePhysicalDevices");
  std::vector<VkPhysicalDevice> devices(count);
  check(vkEnumeratePhysicalDevices(instance, &count, devices.data()), "vulkan", "vkEnumeratePhysicalDevices");
  devices.resize(count);
  return devices;
}

bool has_device_extension(VkPhysicalDevice physical, std::string_view name) {
  std::uint32_t count = 0;
  vkEnumerateDeviceExtensionProperties(physical, nullptr, &count, nullptr);
  std::vector<VkExtensionProperties> extensions(count);
  vkEnumerateDeviceExtensionProperties(physical, nullptr, &count, extensions.data());
  for (const auto& e : extensions)
    if (name == e.extensionName) return true;
  return false;
}

std::uint32_t transfer_family(VkPhysicalDevice physical) {
  std::uint32_t count = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(physical, &count, nullptr);
  std::vector<VkQueueFamilyProperties> families(count);
  vkGetPhysicalDeviceQueueFamilyProperties(physical, &count, families.data());
  for (std::uint32_t i = 0; i < count; ++i)
    if (families[i].queueFlags & (VK_QUEUE_TRANSFER_BIT | VK_QUEUE_COMPUTE_BIT | VK_QUEUE_GRAPHICS_BIT)) return i;
  fail(ErrorCode::device, "vulkan: the device has no queue that can copy buffers");
}

}  // namespace lwload::vulkan
