// Vulkan memory lwload hands out, each a VkBuffer bound to its own VkDeviceMemory (usable as a
// storage buffer and as a copy source/destination): imported file pages (zero_copy, through
// VK_EXT_external_memory_host), host-visible device memory mapped for the loader to read into
// (direct), device-local memory (staged), and mapped host-visible staging slots. The session makes
// them (Session::allocate, Session::import_host, defined in buffers.cpp).
#pragma once

#include "backends/vulkan/layer.hpp"

#include <memory>
#include <span>

#include "backends/session_buffer.hpp"
#include "backends/vulkan/session.hpp"
#include "lwload/vulkan.hpp"

namespace lwload::vulkan {

class VkBufferMemory final : public SessionBuffer<Session> {
 public:
  ~VkBufferMemory() override;
  NativeHandle native() const noexcept override { return {vk_buffer_type(), reinterpret_cast<void*>(buffer_)}; }

  VkBuffer buffer() const noexcept { return buffer_; }
  VkDeviceMemory memory() const noexcept { return memory_; }
  // Imported and host-visible memory: mapped for the buffer's life; nullptr for device-local.
  std::byte* mapped() const noexcept { return host_; }

 protected:
  void read_device(std::uint64_t offset, std::span<std::byte> dst) override;

 private:
  friend class Session;  // the only maker
  VkBufferMemory(std::shared_ptr<Session> s, BufferKind kind, std::uint64_t size)
      : SessionBuffer(std::move(s), size, kind, "vk_host_import") {}
  void create_buffer(const void* next);
  void bind(VkDeviceMemory memory);

  VkBuffer buffer_ = VK_NULL_HANDLE;
  VkDeviceMemory memory_ = VK_NULL_HANDLE;
};

// A staging slot: mapped host-visible memory vkCmdCopyBuffer reads from.
using VkStaging = HostVisibleStaging<VkBufferMemory>;

}  // namespace lwload::vulkan
