// Level Zero memory as lwload buffers: device allocations, host allocations (direct placement),
// imported host pages (zero-copy, by either import path), views, and pinned staging slots.
// Each buffer releases exactly what it acquired, in its destructor.
#pragma once

#include "backends/level_zero/layer.hpp"

#include <cstdint>
#include <memory>
#include <span>

#include "backends/level_zero/ze_session.hpp"
#include "backends/session_buffer.hpp"
#include "lwload/level_zero.hpp"

namespace lwload::level_zero {

// device_local: zeMemAllocDevice, which only the driver can read; host_visible: zeMemAllocHost;
// imported: file pages registered by zexDriverImportExternalPointer ("ze_import") or mapped by
// zeMemAllocHost + ze_external_memmap_sysmem_ext_desc_t ("ze_memmap").
class ZeBuffer final : public SessionBuffer<Session> {
 public:
  // zeMemAllocDevice (device_local) or zeMemAllocHost (host_visible).
  static std::unique_ptr<ZeBuffer> allocate(std::shared_ptr<Session> session, std::uint64_t bytes, MemoryPlace place);
  // `range` is whole pages from a page boundary (import_alignment and size_multiple, which
  // Device::import_host holds it to).
  static ImportResult import(std::shared_ptr<Session> session, std::span<const std::byte> range);

  ~ZeBuffer() override;
  NativeHandle native() const noexcept override { return {ze_ptr_type(), ptr_}; }

 protected:
  void read_device(std::uint64_t offset, std::span<std::byte> dst) override;
  std::unique_ptr<DeviceBuffer> do_view(std::uint64_t offset, std::uint64_t size) override;

 private:
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

class ZeStaging final : public StagingBuffer {
 public:
  ZeStaging(std::shared_ptr<Session> session, std::uint64_t bytes);  // pinned zeMemAllocHost
  ~ZeStaging() override;
  ZeStaging(const ZeStaging&) = delete;
  ZeStaging& operator=(const ZeStaging&) = delete;
  std::span<std::byte> bytes() noexcept override { return {static_cast<std::byte*>(ptr_), size_}; }

 private:
  std::shared_ptr<Session> session_;
  void* ptr_ = nullptr;
  std::size_t size_;
};

}  // namespace lwload::level_zero
