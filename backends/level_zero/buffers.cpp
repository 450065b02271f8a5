// Allocation, import and release of Level Zero memory (see buffers.hpp).
#include "backends/level_zero/buffers.hpp"
#include "core/align.hpp"

#include <unistd.h>

#include <cstring>

#include "backends/level_zero/check.hpp"
#include "lwload/error.hpp"

namespace lwload::level_zero {
namespace {

constexpr std::size_t kDeviceAlignment = 64;

// Level Zero rejects zero-byte allocations; an empty tensor still gets a (1-byte) buffer.
std::size_t alloc_size(std::uint64_t bytes) { return bytes == 0 ? 1 : static_cast<std::size_t>(bytes); }

// A driver that will not take these particular pages (file-backed, read-only, a size it cannot
// map) declines the import: the loader then places those tensors directly instead. Errors that
// mean the device or memory is in trouble still throw.
bool declined(ze_result_t result) {
  return result == ZE_RESULT_ERROR_INVALID_ARGUMENT || result == ZE_RESULT_ERROR_UNSUPPORTED_FEATURE ||
         result == ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT || result == ZE_RESULT_ERROR_UNSUPPORTED_SIZE ||
         result == ZE_RESULT_ERROR_INVALID_SIZE;
}

// Device pointers need not point at host objects, so offsets are applied as integers.
void* offset_ptr(void* base, std::uint64_t offset) {
  return reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(base) + offset);
}

}  // namespace

std::unique_ptr<ZeBuffer> Session::allocate(std::uint64_t bytes, MemoryPlace place) {
  void* ptr = nullptr;
  if (place == MemoryPlace::device_local) {
    const ze_device_mem_alloc_desc_t desc{ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, nullptr, 0, 0};
    check(zeMemAllocDevice(context_, &desc, alloc_size(bytes), kDeviceAlignment, device_, &ptr), label_,
          "zeMemAllocDevice", str(bytes, " bytes"));
    return std::unique_ptr<ZeBuffer>(
        new ZeBuffer(shared_from_this(), BufferKind::device_local, {}, ptr, bytes, ZeBuffer::Release::mem_free));
  }
  const ze_host_mem_alloc_desc_t desc{ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, nullptr, 0};
  check(zeMemAllocHost(context_, &desc, alloc_size(bytes), page_size(), &ptr), label_, "zeMemAllocHost",
        str(bytes, " bytes, host-visible"));
  return std::unique_ptr<ZeBuffer>(
      new ZeBuffer(shared_from_this(), BufferKind::host_visible, {}, ptr, bytes, ZeBuffer::Release::mem_free));
}

ImportResult Session::import_host(std::span<const std::byte> range) {
  // Device::import_host held the range to whole pages (import_alignment and size_multiple): the
  // planner rounded the region, and the caller's mapping covers it.
  const auto address = reinterpret_cast<std::uintptr_t>(range.data());
  void* ptr = const_cast<std::byte*>(range.data());
  const std::string what = str(range.size(), " bytes at 0x", std::hex, address);
  if (import_ == ImportPath::zex) {
    const ze_result_t result = import_fn_(driver_, ptr, range.size());
    if (declined(result))
      return ImportResult::decline(str(kImportExternalPointerName, " refused ", what, ": ", result_name(result)));
    check(result, label_, kImportExternalPointerName, what);
    return {std::unique_ptr<ZeBuffer>(new ZeBuffer(shared_from_this(), BufferKind::imported, "ze_import", ptr,
                                                   range.size(), ZeBuffer::Release::zex_release)),
            {}};
  }
  if (import_ == ImportPath::memmap) {
    ExternalMemmapSysmemExtDesc ext;
    ext.pSystemMemory = ptr;
    ext.size = range.size();
    // Mapped model files are read-only: without this flag the driver refuses the pages.
    const ze_host_mem_alloc_desc_t desc{ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, &ext, kHostMemAllocFlagMemReadOnly};
    void* mapped = nullptr;
    const ze_result_t result = zeMemAllocHost(context_, &desc, range.size(), page_size(), &mapped);
    if (declined(result))
      return ImportResult::decline(
          str("zeMemAllocHost(external_memmap_sysmem) refused ", what, ": ", result_name(result)));
    check(result, label_, "zeMemAllocHost(external_memmap_sysmem)", what);
    if (mapped != ptr) {
      zeMemFree(context_, mapped);
      fail(ErrorCode::device, label_, ": external_memmap_sysmem mapped ", what, " at a different address");
    }
    return {std::unique_ptr<ZeBuffer>(new ZeBuffer(shared_from_this(), BufferKind::imported, "ze_memmap", ptr,
                                                   range.size(), ZeBuffer::Release::mem_free)),
            {}};
  }
  return ImportResult::decline("the driver has no host-pointer import");
}

ZeBuffer::~ZeBuffer() {
  switch (release_) {
    case Release::mem_free: zeMemFree(session_->context(), ptr_); break;
    case Release::zex_release: session_->release_fn()(session_->driver(), ptr_); break;
    case Release::none: break;
  }
}

void ZeBuffer::read_device(std::uint64_t offset, std::span<std::byte> dst) {
  session_->copy_now(dst.data(), offset_ptr(ptr_, offset), dst.size());
}

std::unique_ptr<DeviceBuffer> ZeBuffer::do_view(std::uint64_t offset, std::uint64_t size) {
  return std::unique_ptr<DeviceBuffer>(
      new ZeBuffer(session_, kind_, mechanism(), offset_ptr(ptr_, offset), size, Release::none));
}

}  // namespace lwload::level_zero
