// The non-virtual layer of Device and DeviceBuffer (lwload/backend.hpp): the checks every backend
// shares, made once before the hooks of lwload/backend_impl.hpp run; and apply_overrides().
#include <algorithm>
#include <atomic>
#include <memory>
#include <optional>
#include <span>
#include <string_view>

#include "lwload/backend.hpp"
#include "lwload/backend_impl.hpp"
#include "lwload/error.hpp"

namespace lwload {

namespace {

// The one max_alloc rule every backend's allocations and imports obey.
void check_max_alloc(const DeviceInfo& info, std::uint64_t bytes, std::string_view what) {
  if (bytes > info.caps.max_alloc)
    fail(ErrorCode::out_of_memory, info.id(), ": ", what, " of ", bytes,
         " bytes is larger than the device's max allocation of ", info.caps.max_alloc, " bytes");
}

}  // namespace

std::unique_ptr<DeviceBuffer> Device::allocate(std::uint64_t bytes, MemoryPlace place) {
  check_max_alloc(info(), bytes, place == MemoryPlace::host_visible ? "host-visible allocation" : "allocation");
  return static_cast<DeviceImpl&>(*this).do_allocate(bytes, place);
}

std::unique_ptr<StagingBuffer> Device::allocate_staging(std::uint64_t bytes) {
  check_max_alloc(info(), bytes, "staging slot");
  return static_cast<DeviceImpl&>(*this).do_allocate_staging(bytes);
}

ImportResult Device::import_host(std::span<const std::byte> range) {
  if (range.empty()) fail(ErrorCode::usage, info().id(), ": cannot import an empty host range");
  check_max_alloc(info(), range.size(), "import");
  // The caps the planner shaped regions by, held here once: drivers do not all check them (lavapipe
  // takes misaligned pointers), and a range that misses them is declined, so the tensors load direct.
  // Zero-copy is for unified memory only, as the planner has it; backends check nothing of this.
  const DeviceCaps& caps = info().caps;
  if (!caps.import_host_ptr || info().memory != MemoryModel::unified)
    return ImportResult::decline(str(info().id(), " cannot import host memory (",
                                     caps.import_host_ptr ? "discrete memory" : "no host-pointer import", ")"));
  const auto address = reinterpret_cast<std::uintptr_t>(range.data());
  if (caps.import_alignment > 1 && address % caps.import_alignment != 0)
    return ImportResult::decline(str("host range at 0x", std::hex, address, std::dec, " (", range.size(),
                                     " bytes) is not aligned to the import alignment of ", caps.import_alignment,
                                     " bytes"));
  if (caps.size_multiple > 1 && range.size() % caps.size_multiple != 0)
    return ImportResult::decline(str("import size ", range.size(), " is not a multiple of ", caps.size_multiple));
  return static_cast<DeviceImpl&>(*this).do_import_host(range);
}

void Device::upload(StagingBuffer& staging, std::uint64_t src_offset, DeviceBuffer& dst, std::uint64_t dst_offset,
                    std::uint64_t bytes, TransferDone done) noexcept {
  // `done` at most once, whichever way the backend reports: its own call, or a throw caught here.
  struct Once {
    TransferDone done;
    std::atomic<bool> fired{false};
    void operator()(std::exception_ptr error) {
      if (!fired.exchange(true)) done(std::move(error));
    }
  };
  const auto once = std::make_shared<Once>();
  once->done = std::move(done);
  try {
    const std::uint64_t source = staging.bytes().size();
    if (src_offset > source || bytes > source - src_offset)
      fail(ErrorCode::usage, info().id(), ": upload of ", bytes, " bytes at staging offset ", src_offset,
           " exceeds the ", source, "-byte staging buffer");
    if (dst_offset > dst.size() || bytes > dst.size() - dst_offset)
      fail(ErrorCode::usage, info().id(), ": upload of ", bytes, " bytes at offset ", dst_offset, " exceeds the ",
           dst.size(), "-byte destination buffer (", dst.mechanism(), ")");
    static_cast<DeviceImpl&>(*this).do_upload(staging, src_offset, dst, dst_offset, bytes,
                                              [once](std::exception_ptr error) { (*once)(std::move(error)); });
  } catch (...) {
    (*once)(std::current_exception());
  }
}

namespace {

// The one range rule of read_back() and view(), for every backend.
void check_buffer_range(const DeviceBuffer& buffer, std::string_view what, std::uint64_t offset, std::uint64_t length) {
  if (offset > buffer.size() || length > buffer.size() - offset)
    fail(ErrorCode::usage, what, " of ", length, " bytes at offset ", offset, " is outside a ", buffer.size(), "-byte ",
         buffer.mechanism(), " buffer");
}

}  // namespace

void DeviceBuffer::read_back(std::uint64_t offset, std::span<std::byte> dst) {
  check_buffer_range(*this, "read-back", offset, dst.size());
  if (!dst.empty()) static_cast<DeviceBufferImpl&>(*this).do_read_back(offset, dst);
}

std::unique_ptr<DeviceBuffer> DeviceBuffer::view(std::uint64_t offset, std::uint64_t size) {
  check_buffer_range(*this, "view", offset, size);
  return static_cast<DeviceBufferImpl&>(*this).do_view(offset, size);
}

DeviceInfo apply_overrides(DeviceInfo info, const DeviceOverrides& overrides) {
  if (overrides.memory) info.memory = *overrides.memory;
  if (overrides.max_alloc) info.caps.max_alloc = std::min(info.caps.max_alloc, *overrides.max_alloc);
  if (overrides.import_host_ptr) info.caps.import_host_ptr = info.caps.import_host_ptr && *overrides.import_host_ptr;
  // Lowered, never raised: 0 (unknown) takes the override as it is.
  const auto lower = [](std::uint64_t& reported, const std::optional<std::uint64_t>& to) {
    if (to) reported = reported == 0 ? *to : std::min(reported, *to);
  };
  lower(info.caps.device_memory, overrides.device_memory);
  lower(info.caps.memory_available, overrides.memory_available);
  lower(info.caps.import_limit, overrides.import_limit);
  if (overrides.import_pins) info.caps.import_pins = *overrides.import_pins;
  return info;
}

}  // namespace lwload
