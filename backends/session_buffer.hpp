// What the GPU backends' buffers (CUDA, Level Zero, Vulkan) share: the session they keep alive (so
// a buffer outlives the Device that made it), their size, and that a buffer owns driver objects
// and so is never copied. Each backend's buffer adds its driver handles and its kind of memory.
#pragma once

#include "backends/layer.hpp"

#include <cstdint>
#include <memory>
#include <utility>

#include "lwload/backend_impl.hpp"

namespace lwload {

template <typename Session>
class SessionBuffer : public DeviceBufferImpl {
 public:
  SessionBuffer(const SessionBuffer&) = delete;
  SessionBuffer& operator=(const SessionBuffer&) = delete;

  std::uint64_t size() const noexcept final { return size_; }

 protected:
  SessionBuffer(std::shared_ptr<Session> session, std::uint64_t size) : session_(std::move(session)), size_(size) {}

  const std::shared_ptr<Session> session_;
  const std::uint64_t size_;
};

}  // namespace lwload
