// The vulkan backend: how most integrated GPUs on Linux and Android run inference. Unified devices
// (a memory type both DEVICE_LOCAL and HOST_VISIBLE) with VK_EXT_external_memory_host import the
// planner's page-covering regions of the file mapping as VkDeviceMemory bound to storage buffers
// (zero_copy); without import, direct reads into mapped host-visible memory; discrete devices are
// filled through the staging ring with vkCmdCopyBuffer, one fence per copy.
#include <algorithm>
#include <cstdlib>
#include <string>

#include <mutex>

#include "backends/builtin.hpp"
#include "lwload/backend_impl.hpp"
#include "backends/device_list.hpp"
#include "core/align.hpp"
#include "backends/completion_queue.hpp"
#include "backends/session_device.hpp"
#include "backends/vulkan/buffers.hpp"
#include "backends/vulkan/instance.hpp"
#include "lwload/error.hpp"
#include "lwload/vulkan.hpp"

namespace lwload {
namespace {

using namespace vulkan;

DeviceKind kind_of(VkPhysicalDeviceType type) {
  switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return DeviceKind::igpu;
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return DeviceKind::dgpu;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return DeviceKind::cpu;
    default: return DeviceKind::accelerator;
  }
}

// VK_EXT_memory_budget: what the device-local heaps have left now (budget less usage), the
// largest of them; 0 when the driver does not report budgets.
std::uint64_t heap_budget_left(VkPhysicalDevice physical) {
  if (!has_device_extension(physical, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME)) return 0;
  auto budget =
      make<VkPhysicalDeviceMemoryBudgetPropertiesEXT>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT);
  auto memory = make<VkPhysicalDeviceMemoryProperties2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2);
  memory.pNext = &budget;
  vkGetPhysicalDeviceMemoryProperties2(physical, &memory);
  std::uint64_t left = 0;
  for (std::uint32_t h = 0; h < memory.memoryProperties.memoryHeapCount; ++h)
    if (memory.memoryProperties.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
      left = std::max<std::uint64_t>(
          left, budget.heapBudget[h] > budget.heapUsage[h] ? budget.heapBudget[h] - budget.heapUsage[h] : 0);
  return left;
}

DeviceInfo describe(VkPhysicalDevice physical, std::uint32_t index) {
  auto host = make<VkPhysicalDeviceExternalMemoryHostPropertiesEXT>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_MEMORY_HOST_PROPERTIES_EXT);
  auto maintenance3 =
      make<VkPhysicalDeviceMaintenance3Properties>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES);
  const bool import = has_device_extension(physical, VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME);
  maintenance3.pNext = import ? &host : nullptr;
  auto properties = make<VkPhysicalDeviceProperties2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2);
  properties.pNext = &maintenance3;
  vkGetPhysicalDeviceProperties2(physical, &properties);
  const VkPhysicalDeviceLimits& limits = properties.properties.limits;
  VkPhysicalDeviceMemoryProperties memory{};
  vkGetPhysicalDeviceMemoryProperties(physical, &memory);
  bool unified = false, host_visible = false;
  std::uint64_t device_heap = 0;
  for (std::uint32_t i = 0; i < memory.memoryTypeCount; ++i) {
    const auto flags = memory.memoryTypes[i].propertyFlags;
    unified =
        unified || ((flags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) && (flags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT));
    host_visible = host_visible || (flags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT);
  }
  for (std::uint32_t h = 0; h < memory.memoryHeapCount; ++h)
    if (memory.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
      device_heap = std::max<std::uint64_t>(device_heap, memory.memoryHeaps[h].size);

  DeviceInfo info;
  info.backend = "vulkan";
  info.index = index;
  info.name = properties.properties.deviceName;
  info.kind = kind_of(properties.properties.deviceType);
  info.memory = unified ? MemoryModel::unified : MemoryModel::discrete;
  const std::uint64_t alignment =
      import ? std::max<std::uint64_t>(host.minImportedHostPointerAlignment, 1) : page_size();
  info.caps.import_host_ptr = import && unified;
  info.caps.import_alignment = alignment;
  info.caps.size_multiple = alignment;  // imported sizes must be multiples of it too
  info.caps.max_alloc =
      std::min<std::uint64_t>(maintenance3.maxMemoryAllocationSize, device_heap ? device_heap : UINT64_MAX);
  info.caps.sub_buffer_alignment = limits.minStorageBufferOffsetAlignment;
  info.caps.host_visible_alloc = unified && host_visible;
  info.caps.pinned_staging = true;
  // VK_EXT_external_memory_host imports pin the pages they take (the driver holds them for the GPU).
  info.caps.import_pins = Pinning::yes;
  info.caps.device_memory = device_heap;
  info.caps.memory_available = heap_budget_left(physical);
  // On unified memory host imports count against the same heap's budget.
  if (unified && info.caps.import_host_ptr) info.caps.import_limit = info.caps.memory_available;
  info.caps.max_shader_binding = limits.maxStorageBufferRange;
  info.details.emplace_back("api_version", str(VK_API_VERSION_MAJOR(properties.properties.apiVersion), ".",
                                               VK_API_VERSION_MINOR(properties.properties.apiVersion), ".",
                                               VK_API_VERSION_PATCH(properties.properties.apiVersion)));
  info.details.emplace_back("external_memory_host",
                            import ? str("yes (minImportedHostPointerAlignment ", alignment, ")") : std::string("no"));
  info.details.emplace_back("memory_budget", info.caps.memory_available
                                                 ? str(info.caps.memory_available, " bytes left (VK_EXT_memory_budget)")
                                                 : std::string("not reported (no VK_EXT_memory_budget)"));
  info.details.emplace_back("maxMemoryAllocationSize", std::to_string(maintenance3.maxMemoryAllocationSize));
  info.details.emplace_back("maxStorageBufferRange", std::to_string(limits.maxStorageBufferRange));
  info.details.emplace_back("minStorageBufferOffsetAlignment", std::to_string(limits.minStorageBufferOffsetAlignment));
  return info;
}

class VulkanDevice final : public SessionDevice<Session, VkStaging, CompletionQueue> {
 public:
  using SessionDevice::SessionDevice;

 protected:
  void do_upload(StagingBuffer& staging, std::uint64_t src_offset, DeviceBuffer& dst, std::uint64_t dst_offset,
                 std::uint64_t bytes, TransferDone done) override {
    auto& source = own<VkStaging>(staging, "upload between buffers").buffer();
    auto& target = own<VkBufferMemory>(dst, "upload between buffers");
    const auto submission = session_->submit([&](VkCommandBuffer commands) {
      const VkBufferCopy region{src_offset, dst_offset, bytes};
      vkCmdCopyBuffer(commands, source.buffer(), target.buffer(), 1, &region);
    });
    in_flight_.push(
        [session = session_, submission, bytes]() -> std::exception_ptr {
          const VkResult r = session->wait(submission);
          session->free_submission(submission);
          try {
            session->check(r, "vkWaitForFences", str(bytes, " bytes, upload"));
          } catch (...) {
            return std::current_exception();
          }
          return nullptr;
        },
        std::move(done));
  }
};

class VulkanBackend final : public BackendImpl {
 public:
  std::string_view name() const noexcept override { return "vulkan"; }

  std::vector<DeviceInfo> devices() override {
    std::vector<DeviceInfo> out;
    try {
      const auto physicals = physical_devices(instance()->get());
      for (std::uint32_t i = 0; i < physicals.size(); ++i) out.push_back(describe(physicals[i], i));
    } catch (const Error&) {
      // No loader or ICD: no devices (absent_reason says why).
    }
    return out;
  }

  std::string absent_reason() const override {
    try {
      if (physical_devices(instance()->get()).empty()) return "the Vulkan loader found no physical device";
      return {};
    } catch (const Error& error) {
      return error.what();
    }
  }

  std::unique_ptr<Device> open(std::uint32_t index, const DeviceOverrides& overrides) override {
    DeviceInfo info = apply_overrides(device_at(devices(), index, "vulkan", "Vulkan"), overrides);
    auto session = Session::open(instance(), index, info.id());
    return std::make_unique<VulkanDevice>(std::move(info), std::move(session));
  }

 private:
  // Made on first use and kept: listing devices is cheap after that (an instance per call cost a
  // loader scan each time); a failed creation is tried again next time.
  std::shared_ptr<const Instance> instance() const {
    const std::lock_guard lock(mutex_);
    if (!instance_) instance_ = Instance::create();
    return instance_;
  }

  mutable std::mutex mutex_;
  mutable std::shared_ptr<const Instance> instance_;
};

}  // namespace

std::shared_ptr<Backend> make_vulkan_backend() { return std::make_shared<VulkanBackend>(); }

std::unique_ptr<Device> open_vulkan_device(const VulkanContext& context, const DeviceOverrides& overrides) {
  // The index is the physical device's position in the application's instance.
  const auto physicals = physical_devices(context.instance);
  const auto at = std::find(physicals.begin(), physicals.end(), context.physical);
  if (at == physicals.end()) fail(ErrorCode::usage, "vulkan: the physical device is not one of the instance's");
  const auto index = static_cast<std::uint32_t>(at - physicals.begin());
  DeviceInfo info = describe(context.physical, index);
  // The application enabled the extensions it chose: import only where it enabled host memory.
  auto session = Session::adopt(context, info.id());
  if (!session->can_import()) info.caps.import_host_ptr = false;
  info = apply_overrides(std::move(info), overrides);
  return std::make_unique<VulkanDevice>(std::move(info), std::move(session));
}

std::unique_ptr<Device> open_vulkan_device(VkInstance instance, VkPhysicalDevice physical, VkDevice device,
                                           std::uint32_t queue_family, const DeviceOverrides& overrides) {
  return open_vulkan_device(VulkanContext{instance, physical, device, queue_family}, overrides);
}

NativeType vk_buffer_type() {
  static const NativeType type = register_native_type("vk_buffer");
  return type;
}

std::optional<VulkanTensor> vulkan_tensor(const TensorHandle& tensor) {
  const auto* buffer = dynamic_cast<const vulkan::VkBufferMemory*>(tensor.buffer);
  if (!buffer) return std::nullopt;
  return VulkanTensor{buffer->buffer(), buffer->memory(), tensor.offset};
}

}  // namespace lwload
