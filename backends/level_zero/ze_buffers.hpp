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

class ZeBuffer final : public SessionBuffer<Session> {
 public:
  enum class Kind {
    device_local,   // zeMemAllocDevice; only the driver can read it
    host_visible,   // zeMemAllocHost; the loader reads the file straight into it
    zex_import,     // file pages registered by zexDriverImportExternalPointer
    memmap_import,  // file pages mapped by zeMemAllocHost + ze_external_memmap_sysmem_ext_desc_t
  };

  // zeMemAllocDevice (device_local) or zeMemAllocHost (host_visible).
  static std::unique_ptr<ZeBuffer> allocate(std::shared_ptr<Session> session, std::uint64_t bytes, MemoryPlace place);
  // `range` is whole pages from a page boundary (import_alignment and size_multiple, which
  // Device::import_host holds it to).
  static ImportResult import(std::shared_ptr<Session> session, std::span<const std::byte> range);

  ~ZeBuffer() override;
  NativeHandle native() const noexcept override { return {ze_ptr_type(), ptr_}; }
  std::string_view mechanism() const noexcept override;
  std::span<std::byte> begin_host_write() override;

 protected:
  void do_read_back(std::uint64_t offset, std::span<std::byte> dst) override;
  std::unique_ptr<DeviceBuffer> do_view(std::uint64_t offset, std::uint64_t size) override;

 private:
  ZeBuffer(std::shared_ptr<Session> session, Kind kind, void* ptr, std::uint64_t size, bool host_accessible,
           bool owner = true)
      : SessionBuffer(std::move(session), size), kind_(kind), ptr_(ptr), host_accessible_(host_accessible),
        owner_(owner) {}

  Kind kind_;
  void* ptr_;
  bool host_accessible_;  // the CPU may dereference ptr_ (everything but device-local memory)
  bool owner_;            // false for a view: a range of another buffer (pointer + offset), owns nothing
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
