#include "backends/vulkan/buffers.hpp"

#include <cstring>

#include "lwload/error.hpp"

namespace lwload::vulkan {
namespace {

constexpr VkBufferUsageFlags kUsage =
    VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;

}  // namespace

void VkBufferMemory::create_buffer(const void* next) {
  auto info = make<VkBufferCreateInfo>(VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO);
  info.pNext = next;
  info.size = size_ == 0 ? 1 : size_;
  info.usage = kUsage;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  session_->check(vkCreateBuffer(session_->device(), &info, nullptr, &buffer_), "vkCreateBuffer", str(size_, " bytes"));
}

void VkBufferMemory::bind(VkDeviceMemory memory) {
  memory_ = memory;
  session_->check(vkBindBufferMemory(session_->device(), buffer_, memory_, 0), "vkBindBufferMemory");
}

std::unique_ptr<VkBufferMemory> Session::allocate(std::uint64_t bytes, MemoryPlace place) {
  const BufferKind kind = place == MemoryPlace::host_visible ? BufferKind::host_visible : BufferKind::device_local;
  std::unique_ptr<VkBufferMemory> b(new VkBufferMemory(shared_from_this(), kind, bytes));
  b->create_buffer(nullptr);
  VkMemoryRequirements needs{};
  vkGetBufferMemoryRequirements(device(), b->buffer_, &needs);
  const VkMemoryPropertyFlags flags = kind == BufferKind::device_local
                                          ? VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT
                                          : VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  const auto type = memory_type(needs.memoryTypeBits, flags);
  if (!type) fail(ErrorCode::device, label(), ": no memory type for a ", bytes, "-byte buffer");
  auto info = make<VkMemoryAllocateInfo>(VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO);
  info.allocationSize = needs.size;
  info.memoryTypeIndex = *type;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  check(vkAllocateMemory(device(), &info, nullptr, &memory), "vkAllocateMemory", str(bytes, " bytes"));
  b->bind(memory);
  if (kind != BufferKind::device_local) {
    void* mapped = nullptr;
    check(vkMapMemory(device(), memory, 0, VK_WHOLE_SIZE, 0, &mapped), "vkMapMemory");
    b->host_ = static_cast<std::byte*>(mapped);
  }
  return b;
}

ImportResult Session::import_host(std::span<const std::byte> range) {
  if (!can_import()) return ImportResult::decline("VK_EXT_external_memory_host is not enabled");
  // Device::import_host held the range to minImportedHostPointerAlignment (lavapipe would take a
  // misaligned pointer; real drivers do not).
  std::unique_ptr<VkBufferMemory> b(new VkBufferMemory(shared_from_this(), BufferKind::imported, range.size()));
  auto external = make<VkExternalMemoryBufferCreateInfo>(VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO);
  external.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;
  b->create_buffer(&external);
  VkMemoryRequirements needs{};
  vkGetBufferMemoryRequirements(device(), b->buffer_, &needs);
  if (needs.size > range.size())
    return ImportResult::decline(
        str("the buffer needs ", needs.size, " bytes of memory, the range has ", range.size()));
  auto pointer = make<VkMemoryHostPointerPropertiesEXT>(VK_STRUCTURE_TYPE_MEMORY_HOST_POINTER_PROPERTIES_EXT);
  if (const VkResult r = host_pointer_properties(range.data(), &pointer); r != VK_SUCCESS)
    return ImportResult::decline(str("vkGetMemoryHostPointerPropertiesEXT: ", result_name(r)));
  const auto type = memory_type(pointer.memoryTypeBits & needs.memoryTypeBits, 0);
  if (!type) return ImportResult::decline("no memory type both the pointer and the buffer accept");
  auto host = make<VkImportMemoryHostPointerInfoEXT>(VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT);
  host.handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;
  host.pHostPointer = const_cast<std::byte*>(range.data());  // read-only pages: nothing writes them
  auto info = make<VkMemoryAllocateInfo>(VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO);
  info.pNext = &host;
  info.allocationSize = range.size();
  info.memoryTypeIndex = *type;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  const VkResult r = vkAllocateMemory(device(), &info, nullptr, &memory);
  if (r == VK_ERROR_INVALID_EXTERNAL_HANDLE || r == VK_ERROR_OUT_OF_DEVICE_MEMORY)
    return ImportResult::decline(str("vkAllocateMemory(VkImportMemoryHostPointerInfoEXT): ", result_name(r)));
  check(r, "vkAllocateMemory", "host pointer import");
  b->bind(memory);
  void* mapped = nullptr;
  check(vkMapMemory(device(), memory, 0, VK_WHOLE_SIZE, 0, &mapped), "vkMapMemory", "imported pages");
  b->host_ = static_cast<std::byte*>(mapped);
  return {std::move(b), {}};
}

VkBufferMemory::~VkBufferMemory() {
  const VkDevice device = session_->device();
  if (host_) vkUnmapMemory(device, memory_);
  if (buffer_) vkDestroyBuffer(device, buffer_, nullptr);
  if (memory_) vkFreeMemory(device, memory_, nullptr);
}

void VkBufferMemory::read_device(std::uint64_t offset, std::span<std::byte> dst) {
  // Through a temporary host-visible buffer.
  const auto bounce = session_->allocate(dst.size(), MemoryPlace::host_visible);
  const auto submission = session_->submit([&](VkCommandBuffer commands) {
    const VkBufferCopy region{offset, 0, dst.size()};
    vkCmdCopyBuffer(commands, buffer_, bounce->buffer(), 1, &region);
  });
  const VkResult r = session_->wait(submission);
  session_->free_submission(submission);
  session_->check(r, "vkWaitForFences", "read-back");
  std::memcpy(dst.data(), bounce->mapped(), dst.size());
}

}  // namespace lwload::vulkan
