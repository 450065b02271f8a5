// Allocation, import, sync and read-back of XRT buffer objects (see buffers.hpp).
#include "backends/xrt/buffers.hpp"

#include <algorithm>
#include <cstring>
#include <exception>
#include <ios>

#include "backends/xrt/check.hpp"
#include "lwload/error.hpp"

namespace lwload::xrt_backend {
namespace {

// Memory group 0: lwload loads no xclbin, so no kernel names another bank. A driver that needs a
// kernel's group refuses the buffer, and the error (or the import's reason) carries its words.
constexpr ::xrt::memory_group kGroup = 0;

// No zero-size buffer objects: an empty tensor still gets a one-byte buffer.
std::size_t bo_size(std::uint64_t bytes) { return bytes == 0 ? 1 : static_cast<std::size_t>(bytes); }

// Read-back of device-only memory goes through host-mapped buffers of at most this size.
constexpr std::uint64_t kReadBackChunk = 16ull << 20;

}  // namespace

std::unique_ptr<XrtBuffer> Session::allocate(std::uint64_t bytes, MemoryPlace place) {
  if (place == MemoryPlace::device_local) {
    auto bo = call(label_, "xrt::bo(device_only)", str(bytes, " bytes"),
                   [&] { return ::xrt::bo(device_, bo_size(bytes), ::xrt::bo::flags::device_only, kGroup); });
    return std::unique_ptr<XrtBuffer>(
        new XrtBuffer(shared_from_this(), BufferKind::device_local, std::move(bo), nullptr, bytes));
  }
  const auto flags = unified_ ? ::xrt::bo::flags::host_only : ::xrt::bo::flags::normal;
  const char* call_name = unified_ ? "xrt::bo(host_only)" : "xrt::bo(normal)";
  auto bo = call(label_, call_name, str(bytes, " bytes, host-visible"),
                 [&] { return ::xrt::bo(device_, bo_size(bytes), flags, kGroup); });
  auto* host = call(label_, "xrt::bo::map", str(bytes, " bytes"), [&] { return bo.map<std::byte*>(); });
  return std::unique_ptr<XrtBuffer>(
      new XrtBuffer(shared_from_this(), BufferKind::host_visible, std::move(bo), host, bytes));
}

ImportResult Session::import_host(std::span<const std::byte> range) {
  // Device::import_host held the range to whole pages (import_alignment and size_multiple): the
  // planner rounded the region, and the caller's mapping covers it.
  void* ptr = const_cast<std::byte*>(range.data());
  const std::string what = str(range.size(), " bytes at 0x", std::hex, reinterpret_cast<std::uintptr_t>(ptr));
  ::xrt::bo bo;
  try {
    bo = ::xrt::bo(device_, ptr, range.size(), ::xrt::bo::flags::normal, kGroup);
  } catch (const std::exception& e) {
    // Older amdxdna stacks answer "not supported"; drivers that pin for writing refuse read-only
    // file pages. Either way these pages are not the device's: the planner places them otherwise.
    return ImportResult::decline(str("xrt::bo(user pointer) refused ", what, ": ", what_of(e)));
  }
  call(label_, "xrt::bo::sync(XCL_BO_SYNC_BO_TO_DEVICE)", what,
       [&] { bo.sync(XCL_BO_SYNC_BO_TO_DEVICE, range.size(), 0); });
  return {std::unique_ptr<XrtBuffer>(new XrtBuffer(shared_from_this(), BufferKind::imported, std::move(bo),
                                                   static_cast<std::byte*>(ptr), range.size())),
          {}};
}

void XrtBuffer::end_host_write() {
  if (kind_ != BufferKind::host_visible || size_ == 0) return;
  call(session_->label(), "xrt::bo::sync(XCL_BO_SYNC_BO_TO_DEVICE)", str(size_, " bytes"),
       [&] { bo_.sync(XCL_BO_SYNC_BO_TO_DEVICE, static_cast<std::size_t>(size_), 0); });
}

void XrtBuffer::do_read_back(std::uint64_t offset, std::span<std::byte> dst) {
  if (kind_ == BufferKind::host_visible)
    call(session_->label(), "xrt::bo::sync(XCL_BO_SYNC_BO_FROM_DEVICE)", str(dst.size(), " bytes at offset ", offset),
         [&] { bo_.sync(XCL_BO_SYNC_BO_FROM_DEVICE, dst.size(), static_cast<std::size_t>(offset)); });
  SessionBuffer::do_read_back(offset, dst);
}

void XrtBuffer::read_device(std::uint64_t offset, std::span<std::byte> dst) {
  const std::uint64_t chunk = std::min<std::uint64_t>(dst.size(), kReadBackChunk);
  auto bounce = session_->allocate(chunk, MemoryPlace::host_visible);
  for (std::uint64_t done = 0; done < dst.size();) {
    const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(chunk, dst.size() - done));
    call(session_->label(), "xrt::bo::copy", str(n, " bytes at offset ", offset + done, ", read-back"), [&] {
      bounce->bo().copy(bo_, n, static_cast<std::size_t>(offset + done), 0);
      bounce->bo().sync(XCL_BO_SYNC_BO_FROM_DEVICE, n, 0);
    });
    std::memcpy(dst.data() + done, bounce->host_, n);
    done += n;
  }
}

std::unique_ptr<DeviceBuffer> XrtBuffer::do_view(std::uint64_t offset, std::uint64_t size) {
  if (kind_ == BufferKind::device_local) return nullptr;  // XRT 2.13 makes sub-buffers of host-backed buffers only
  auto sub = call(session_->label(), "xrt::bo(sub-buffer)", str(size, " bytes at offset ", offset),
                  [&] { return ::xrt::bo(bo_, bo_size(size), static_cast<std::size_t>(offset)); });
  return std::unique_ptr<DeviceBuffer>(
      new XrtBuffer(session_, kind_, std::move(sub), host_ != nullptr ? host_ + offset : nullptr, size));
}

}  // namespace lwload::xrt_backend
