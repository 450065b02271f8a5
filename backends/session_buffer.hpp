// What the GPU backends' buffers (CUDA, Level Zero, Vulkan) share: the session they keep alive (so
// a buffer outlives the Device that made it), their size, the three kinds of memory they hand out
// and where the host addresses them, and that a buffer owns driver objects and so is never copied.
// Each backend's buffer adds its driver handles, its name for an import, and how device-local
// bytes are read back. Its session makes it (Session::allocate and Session::import_host, in the
// backend's buffers .cpp), as a device allocator does. Level Zero's and Vulkan's staging slots are
// host-visible buffers of the same kind (HostVisibleStaging).
#pragma once

#include "backends/layer.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <utility>

#include "lwload/backend_impl.hpp"
#include "lwload/error.hpp"

namespace lwload {

enum class BufferKind {
  device_local,  // only the device reads it: filled by staging uploads
  host_visible,  // the host writes it: the loader reads the file straight into it (direct)
  imported,      // file pages the device uses in place (zero_copy)
};

template <typename Session>
class SessionBuffer : public DeviceBufferImpl {
 public:
  SessionBuffer(const SessionBuffer&) = delete;
  SessionBuffer& operator=(const SessionBuffer&) = delete;

  std::uint64_t size() const noexcept final { return size_; }

  // "allocated", "host_visible", or the backend's name for how it imported the pages.
  std::string_view mechanism() const noexcept final {
    switch (kind_) {
      case BufferKind::device_local: return "allocated";
      case BufferKind::host_visible: return "host_visible";
      case BufferKind::imported: break;
    }
    return imported_as_;
  }

  // The whole allocation for host-visible memory; nothing for any other kind (the loader stages
  // device-local memory, and imported pages are the file's).
  std::span<std::byte> begin_host_write() final {
    if (kind_ != BufferKind::host_visible) return {};
    return {host_, static_cast<std::size_t>(size_)};
  }

 protected:
  // `imported_as` names an imported buffer's mechanism ("cuda_host_register", "ze_memmap", ...).
  SessionBuffer(std::shared_ptr<Session> session, std::uint64_t size, BufferKind kind,
                std::string_view imported_as = {})
      : session_(std::move(session)), size_(size), kind_(kind), imported_as_(imported_as) {}

  // Bytes the host addresses (host-visible memory, imported pages) are read through the guarded
  // copy, since imported pages may be gone (the file truncated since); device-local bytes by the
  // backend. A backend whose host-visible memory is the host's copy of the device's (XRT's buffer
  // objects, synced either way) brings the device's bytes over first, then calls this.
  void do_read_back(std::uint64_t offset, std::span<std::byte> dst) override {
    if (host_) read_file_pages(dst, host_ + offset, offset, session_->label());
    else read_device(offset, dst);
  }
  virtual void read_device(std::uint64_t offset, std::span<std::byte> dst) = 0;

  const std::shared_ptr<Session> session_;
  const std::uint64_t size_;
  const BufferKind kind_;
  std::byte* host_ = nullptr;  // where the host addresses the bytes; nullptr for device-local memory

 private:
  std::string_view imported_as_;
};

// A staging slot that is one of the backend's host-visible buffers: pinned host memory the device
// copies from at full speed, allocated, addressed and released exactly as direct placement's is.
template <typename Buffer>
class HostVisibleStaging final : public StagingBuffer {
 public:
  template <typename Session>
  HostVisibleStaging(const std::shared_ptr<Session>& session, std::uint64_t bytes)
      : buffer_(allocate(*session, bytes)), bytes_(buffer_->begin_host_write()) {}

  std::span<std::byte> bytes() noexcept override { return bytes_; }
  Buffer& buffer() noexcept { return *buffer_; }

 private:
  // A failure says it was for a staging slot: the backend's message speaks of host-visible memory.
  template <typename Session>
  static std::unique_ptr<Buffer> allocate(Session& session, std::uint64_t bytes) {
    try {
      return session.allocate(bytes, MemoryPlace::host_visible);
    } catch (const Error& e) {
      throw Error(e.code(), str("staging slot of ", bytes, " bytes: ", e.what()));
    }
  }

  std::unique_ptr<Buffer> buffer_;
  std::span<std::byte> bytes_;
};

}  // namespace lwload
