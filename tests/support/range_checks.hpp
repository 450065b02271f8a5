// One check every backend's suite runs on its own device: read_back() and view() of a range
// outside a buffer give one error, the same text on every backend, because DeviceBuffer's
// non-virtual layer checks the range before any backend code runs. The expected text is spelled
// out here once, so a backend that checks (or fails to check) on its own diverges and fails.
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <filesystem>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lwload/backend.hpp"
#include "lwload/error.hpp"
#include "lwload/file_system.hpp"
#include "support/test_support.hpp"

namespace lwload::test {

// The one message of an out-of-range read_back() ("read-back") or view() ("view").
inline std::string expected_range_error(std::string_view what, std::uint64_t offset, std::uint64_t length,
                                        const DeviceBuffer& buffer) {
  return str(what, " of ", length, " bytes at offset ", offset, " is outside a ", buffer.size(), "-byte ",
             buffer.mechanism(), " buffer");
}

// Out-of-range read_back() and view() on `buffer`: Error(usage) with expected_range_error's text.
inline void check_buffer_ranges(DeviceBuffer& buffer) {
  const std::uint64_t size = buffer.size();
  CAPTURE(buffer.mechanism());
  CAPTURE(size);
  struct Range {
    std::uint64_t offset, length;
  };
  const Range outside[] = {
      {size - 10, 11},                                     // one byte past the end
      {size + 1, 0},                                       // an empty range past the end
      {std::numeric_limits<std::uint64_t>::max() - 1, 4},  // offset + length wraps around
  };
  for (const Range& r : outside) {
    CAPTURE(r.offset);
    CAPTURE(r.length);
    std::vector<std::byte> dst(static_cast<std::size_t>(r.length));
    const Error read = error_of([&] { buffer.read_back(r.offset, dst); });
    CHECK(read.code() == ErrorCode::usage);
    CHECK(std::string(read.what()) == expected_range_error("read-back", r.offset, r.length, buffer));
    const Error view = error_of([&] { buffer.view(r.offset, r.length); });
    CHECK(view.code() == ErrorCode::usage);
    CHECK(std::string(view.what()) == expected_range_error("view", r.offset, r.length, buffer));
  }
  // The last byte and the whole buffer are inside: no range error (a view may still be nullptr).
  CHECK_NOTHROW(buffer.view(size - 1, 1));
  CHECK_NOTHROW(buffer.view(0, size));
  if (auto whole = buffer.view(0, size)) CHECK(whole->size() == size);
}

// check_buffer_ranges on a device's buffers: device-local, host-visible where the device has such
// memory, and an import of mapped file pages where it imports them. Returns how many buffers were
// checked. `can_read` false: the device cannot read back (null), so in-range reads are not tried.
inline int check_device_ranges(Device& device, const std::filesystem::path& scratch, bool can_read = true) {
  constexpr std::uint64_t kBytes = 64 << 10;
  int checked = 0;
  const auto check = [&](DeviceBuffer& buffer) {
    check_buffer_ranges(buffer);
    if (can_read) {
      std::vector<std::byte> last(1);
      CHECK_NOTHROW(buffer.read_back(buffer.size() - 1, last));
    }
    ++checked;
  };
  const auto local = device.allocate(kBytes, MemoryPlace::device_local);
  check(*local);
  if (device.info().caps.host_visible_alloc) {
    const auto visible = device.allocate(kBytes, MemoryPlace::host_visible);
    check(*visible);
  }
  const std::filesystem::path file = scratch / "range_checks.bin";
  write_file(file, std::vector<std::byte>(kBytes, std::byte{0x5a}));
  const auto opened = posix_file_system()->open(file);
  const auto mapping = opened->map(0, kBytes);
  if (mapping) {
    ImportResult imported = device.import_host(mapping->bytes());
    if (imported.buffer) check(*imported.buffer);
  }
  return checked;
}

}  // namespace lwload::test
