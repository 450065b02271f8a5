#include "backends/vulkan/session.hpp"

#include <cstdlib>
#include <cstring>
#include <vector>

#include "backends/vulkan/instance.hpp"
#include "lwload/error.hpp"

namespace lwload::vulkan {

std::string result_name(VkResult result) {
  switch (result) {
    case VK_SUCCESS: return "VK_SUCCESS";
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_INVALID_EXTERNAL_HANDLE: return "VK_ERROR_INVALID_EXTERNAL_HANDLE";
    case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT";
    default: return str("VkResult ", static_cast<int>(result));
  }
}

void check(VkResult result, std::string_view device, std::string_view call, std::string_view what) {
  if (result == VK_SUCCESS) return;
  const bool oom = result == VK_ERROR_OUT_OF_HOST_MEMORY || result == VK_ERROR_OUT_OF_DEVICE_MEMORY;
  fail(oom ? ErrorCode::out_of_memory : ErrorCode::device, device, ": ", call, " failed: ", result_name(result),
       what.empty() ? "" : " (", what, what.empty() ? "" : ")");
}

std::shared_ptr<Session> Session::open(std::shared_ptr<const Instance> instance, std::uint32_t index,
                                       std::string label) {
  std::shared_ptr<Session> s(new Session(std::move(label)));
  s->own_instance_ = std::move(instance);
  VulkanContext& context = s->context_;
  context.instance = s->own_instance_->get();
  const auto physicals = physical_devices(context.instance);
  if (index >= physicals.size()) fail(ErrorCode::usage, s->label_, ": no such device");
  context.physical = physicals[index];
  context.queue_family = transfer_family(context.physical);
  const float priority = 1.0f;
  auto queue = make<VkDeviceQueueCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO);
  queue.queueFamilyIndex = context.queue_family;
  queue.queueCount = 1;
  queue.pQueuePriorities = &priority;
  std::vector<const char*> extensions;
  if (has_device_extension(context.physical, VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME))
    extensions.push_back(VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME);
  auto info = make<VkDeviceCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO);
  info.queueCreateInfoCount = 1;
  info.pQueueCreateInfos = &queue;
  info.enabledExtensionCount = static_cast<std::uint32_t>(extensions.size());
  info.ppEnabledExtensionNames = extensions.data();
  s->check(vkCreateDevice(context.physical, &info, nullptr, &context.device), "vkCreateDevice");
  s->owns_device_ = true;
  s->init_device_level();
  return s;
}

std::shared_ptr<Session> Session::adopt(const VulkanContext& context, std::string label) {
  std::shared_ptr<Session> s(new Session(std::move(label)));
  s->context_ = context;
  s->init_device_level();
  return s;
}

void Session::init_device_level() {
  vkGetPhysicalDeviceMemoryProperties(context_.physical, &memory_);
  vkGetDeviceQueue(context_.device, context_.queue_family, 0, &queue_);
  get_host_pointer_properties_ = reinterpret_cast<PFN_vkGetMemoryHostPointerPropertiesEXT>(
      vkGetDeviceProcAddr(context_.device, "vkGetMemoryHostPointerPropertiesEXT"));
  auto pool = make<VkCommandPoolCreateInfo>(VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO);
  pool.flags = VK_COMMAND_POOL_CREATE_TRANSIENT_BIT;
  pool.queueFamilyIndex = context_.queue_family;
  check(vkCreateCommandPool(context_.device, &pool, nullptr, &pool_), "vkCreateCommandPool");
}

Session::~Session() {
  if (context_.device) vkDeviceWaitIdle(context_.device);
  if (pool_) vkDestroyCommandPool(context_.device, pool_, nullptr);
  if (owns_device_) vkDestroyDevice(context_.device, nullptr);
}

std::optional<std::uint32_t> Session::memory_type(std::uint32_t type_bits, VkMemoryPropertyFlags flags) const {
  for (std::uint32_t i = 0; i < memory_.memoryTypeCount; ++i)
    if ((type_bits & (1u << i)) && (memory_.memoryTypes[i].propertyFlags & flags) == flags) return i;
  return std::nullopt;
}

VkResult Session::host_pointer_properties(const void* pointer, VkMemoryHostPointerPropertiesEXT* out) const {
  return get_host_pointer_properties_(context_.device, VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT, pointer,
                                      out);
}

Session::Submission Session::begin() {
  Submission s;
  auto alloc = make<VkCommandBufferAllocateInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
  alloc.commandPool = pool_;
  alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  alloc.commandBufferCount = 1;
  check(vkAllocateCommandBuffers(context_.device, &alloc, &s.commands), "vkAllocateCommandBuffers");
  auto begin = make<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  const VkResult r = vkBeginCommandBuffer(s.commands, &begin);
  if (r != VK_SUCCESS) vkFreeCommandBuffers(context_.device, pool_, 1, &s.commands);
  check(r, "vkBeginCommandBuffer");
  return s;
}

void Session::end(Submission& s) {
  VkResult r = vkEndCommandBuffer(s.commands);
  auto fence = make<VkFenceCreateInfo>(VK_STRUCTURE_TYPE_FENCE_CREATE_INFO);
  if (r == VK_SUCCESS) r = vkCreateFence(context_.device, &fence, nullptr, &s.fence);
  if (r == VK_SUCCESS) {
    auto submit = make<VkSubmitInfo>(VK_STRUCTURE_TYPE_SUBMIT_INFO);
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &s.commands;
    r = vkQueueSubmit(queue_, 1, &submit, s.fence);
  }
  if (r != VK_SUCCESS) {
    if (s.fence) vkDestroyFence(context_.device, s.fence, nullptr);
    vkFreeCommandBuffers(context_.device, pool_, 1, &s.commands);
    check(r, "vkQueueSubmit");
  }
}

VkResult Session::wait(const Submission& s) const {
  return vkWaitForFences(context_.device, 1, &s.fence, VK_TRUE, UINT64_MAX);
}

void Session::free_submission(const Submission& s) {
  const std::lock_guard lock(mutex_);
  vkDestroyFence(context_.device, s.fence, nullptr);
  vkFreeCommandBuffers(context_.device, pool_, 1, &s.commands);
}

}  // namespace lwload::vulkan
