// Level Zero memory as lwload buffers: device allocations, host allocations (direct placement, and
// the staging slots), imported host pages (zero-copy, by either import path) and views. The session
// makes them (Session::allocate, Session::import_host, defined in buffers.cpp); each buffer
// releases exactly what it acquired, in its destructor.
#pragma once

#include "backends/level_zero/layer.hpp"

#include <cstdint>
#include <memory>
#include <span>

#include "backends/level_zero/session.hpp"
#include "backends/session_buffer.hpp"
#include "lwload/level_zero.hpp"

namespace lwload::level_zero {

// device_local: zeMemAllocDevice, which only the driver can read; host_visible: zeMemAllocHost;
// imported: file pages registered by zexDriverImportExternalPointer ("ze_import") or mapped by
// zeMemAllocHost + ze_external_memmap_sysmem_ext_desc_t ("ze_memmap").
class ZeBuffer final : public SessionBuffer<Session> {
 public:
  ~ZeBuffer() override;
  NativeHandle native() const noexcept override { return {ze_ptr_type(), ptr_}; }

 protected:
  void read_device(std::uint64_t offset, std::span<std::byte> dst) override;
  std::unique_ptr<DeviceBuffer> do_view(std::uint64_t offset, std::uint64_t size) override;

 private:
  friend class Session;                                // the only maker
  enum class Release { mem_free, zex_release, none };  // none: a view, a range of another buffer

  // The CPU may dereference `ptr` for every kind but device_local.
  ZeBuffer(std::shared_ptr<Session> session, BufferKind kind, std::string_view imported_as, void* ptr,
           std::uint64_t size, Release release)
      : SessionBuffer(std::move(session), size, kind, imported_as), ptr_(ptr), release_(release) {
    if (kind != BufferKind::device_local) host_ = static_cast<std::byte*>(ptr);
  }

  void* ptr_;
  Release release_;
};

// A staging slot: pinned zeMemAllocHost memory.
using ZeStaging = HostVisibleStaging<ZeBuffer>;

}  // namespace lwload::level_zero
