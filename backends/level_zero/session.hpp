// One opened Level Zero device: its context and the synchronous copy list used for read-back.
// Shared (shared_ptr) by the Device and by every buffer it made, so buffers may outlive the
// Device object and the context is destroyed only after the last of them is freed.
#pragma once

#include "backends/level_zero/layer.hpp"

#include <level_zero/ze_api.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>

#include "backends/level_zero/discovery.hpp"
#include "backends/level_zero/extensions.hpp"
#include "lwload/backend.hpp"

namespace lwload::level_zero {

class ZeBuffer;  // buffers.hpp

class Session : public std::enable_shared_from_this<Session> {
 public:
  // Creates the context and read-back list; throws Error(device) naming the failing call.
  static std::shared_ptr<Session> open(const FoundDevice& found);
  // The same in the application's `context`, which the session uses and never destroys.
  static std::shared_ptr<Session> adopt(const FoundDevice& found, ze_context_handle_t context);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  ze_driver_handle_t driver() const noexcept { return driver_; }
  ze_device_handle_t device() const noexcept { return device_; }
  ze_context_handle_t context() const noexcept { return context_; }
  std::uint32_t copy_ordinal() const noexcept { return copy_ordinal_; }
  ReleaseImportedPointerFn release_fn() const noexcept { return release_fn_; }
  // "level_zero:0 (device name)", the prefix of every error message.
  const std::string& label() const noexcept { return label_; }

  // Blocking copy between any two USM or host pointers (read-back for --verify).
  void copy_now(void* dst, const void* src, std::size_t bytes);

  // The memory this context hands out (buffers.cpp): zeMemAllocDevice (device_local) or
  // zeMemAllocHost (host_visible).
  std::unique_ptr<ZeBuffer> allocate(std::uint64_t bytes, MemoryPlace place);
  // Imports file pages by the driver's import path. `range` is whole pages from a page boundary
  // (import_alignment and size_multiple, which Device::import_host holds it to).
  ImportResult import_host(std::span<const std::byte> range);

 private:
  Session() = default;
  static std::shared_ptr<Session> start(const FoundDevice& found, ze_context_handle_t context);
  ze_driver_handle_t driver_ = nullptr;
  ze_device_handle_t device_ = nullptr;
  ze_context_handle_t context_ = nullptr;
  bool owns_context_ = false;
  ze_command_list_handle_t sync_list_ = nullptr;
  std::mutex sync_mutex_;
  std::uint32_t copy_ordinal_ = 0;
  ImportPath import_ = ImportPath::none;
  ImportExternalPointerFn import_fn_ = nullptr;
  ReleaseImportedPointerFn release_fn_ = nullptr;
  std::string label_;
};

}  // namespace lwload::level_zero
