// One Vulkan device as lwload drives it: the instance, physical device, logical device and a
// transfer-capable queue — lwload's own, or the application's (adopted, never destroyed) — plus
// the memory types and the VK_EXT_external_memory_host entry point imports need.
#pragma once

#include "backends/vulkan/layer.hpp"

#include <vulkan/vulkan.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>

#include "lwload/backend.hpp"
#include "lwload/vulkan.hpp"

namespace lwload::vulkan {

class Instance;        // instance.hpp
class VkBufferMemory;  // buffers.hpp

// A zeroed Vulkan struct with its sType set (aggregate initialisation would trip
// -Wmissing-field-initializers on every struct).
template <typename T>
T make(VkStructureType type) {
  T value{};
  value.sType = type;
  return value;
}

// Throws Error(out_of_memory) for VK_ERROR_OUT_OF_{HOST,DEVICE}_MEMORY, Error(device) otherwise.
void check(VkResult result, std::string_view device, std::string_view call, std::string_view what = {});
std::string result_name(VkResult result);

class Session : public std::enable_shared_from_this<Session> {
 public:
  // lwload's own instance (with the validation layer when LWLOAD_VULKAN_VALIDATION=1) and device.
  static std::shared_ptr<Session> open(std::shared_ptr<const Instance> instance, std::uint32_t index,
                                       std::string label);
  // The application's objects; lwload creates only its command pool.
  static std::shared_ptr<Session> adopt(const VulkanContext& context, std::string label);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  VkDevice device() const noexcept { return context_.device; }
  const std::string& label() const noexcept { return label_; }
  bool can_import() const noexcept { return get_host_pointer_properties_ != nullptr; }
  // The first memory type among `type_bits` with all of `flags`, or nullopt.
  std::optional<std::uint32_t> memory_type(std::uint32_t type_bits, VkMemoryPropertyFlags flags) const;
  VkResult host_pointer_properties(const void* pointer, VkMemoryHostPointerPropertiesEXT* out) const;
  void check(VkResult result, std::string_view call, std::string_view what = {}) const {
    vulkan::check(result, label_, call, what);
  }

  // The memory this device hands out (buffers.cpp): host-visible memory mapped for the host to
  // write, or device-local memory.
  std::unique_ptr<VkBufferMemory> allocate(std::uint64_t bytes, MemoryPlace place);
  // `range` meets the import alignment and size multiple; a refusal declines with the reason.
  ImportResult import_host(std::span<const std::byte> range);

  // Records `record` into a one-time command buffer and submits it with a new fence; the returned
  // pair is what the caller waits on and then frees (free_submission). Thread-safe.
  struct Submission {
    VkCommandBuffer commands = VK_NULL_HANDLE;
    VkFence fence = VK_NULL_HANDLE;
  };
  template <typename Record>
  Submission submit(Record&& record) {
    // Recording uses the pool too: the whole submission holds the lock (the validation layer's
    // thread checks caught recording racing a free on the completion thread).
    const std::lock_guard lock(mutex_);
    Submission s = begin();
    record(s.commands);
    end(s);
    return s;
  }
  // Waits for the fence; returns its result.
  VkResult wait(const Submission& s) const;
  void free_submission(const Submission& s);

 private:
  explicit Session(std::string label) : label_(std::move(label)) {}
  void init_device_level();
  Submission begin();       // with mutex_ held
  void end(Submission& s);  // with mutex_ held

  std::string label_;
  std::shared_ptr<const Instance> own_instance_;  // lwload's, kept alive while this device lives
  VulkanContext context_;                         // the application's, or lwload's device in own_instance_
  bool owns_device_ = false;
  VkQueue queue_ = VK_NULL_HANDLE;
  VkPhysicalDeviceMemoryProperties memory_{};
  PFN_vkGetMemoryHostPointerPropertiesEXT get_host_pointer_properties_ = nullptr;
  std::mutex mutex_;  // the command pool and the queue are externally synchronised
  VkCommandPool pool_ = VK_NULL_HANDLE;
};

}  // namespace lwload::vulkan
