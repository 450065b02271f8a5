// XRT device discovery (see discovery.hpp).
#include "backends/xrt/discovery.hpp"
#include "core/align.hpp"

#include <experimental/xrt_system.h>

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <limits>
#include <string>
#include <string_view>

#include "lwload/error.hpp"

namespace lwload::xrt_backend {
namespace {

template <::xrt::info::device param>
std::string text_info(const ::xrt::device& device) {
  try {
    return device.get_info<param>();
  } catch (const std::exception&) {
    return {};  // a driver shim that does not answer this query (XRT's noop device answers none)
  }
}

// XRT has no device-type query: the name tells. Cards (Alveo, Versal) report their platform's
// name, "xilinx_u250_gen3x16_xdma_shell_4_1" and the like: discrete, with device-local banks.
// Anything else — AMD's NPUs, and a device that reports no name (XRT's noop and emulation devices,
// whose buffers are host memory) — is taken to share host memory; DeviceOverrides say otherwise.
bool is_card(std::string_view name) { return name.rfind("xilinx_", 0) == 0; }

DeviceInfo describe(const ::xrt::device& device, std::uint32_t index) {
  DeviceInfo info;
  info.backend = "xrt";
  info.index = index;
  const std::string reported = text_info<::xrt::info::device::name>(device);
  const bool card = is_card(reported);
  if (!reported.empty()) {
    info.name = reported;
  } else {
    const char* mode = std::getenv("XCL_EMULATION_MODE");  // XRT's own switch: which shim it loaded
    info.name = mode != nullptr && *mode != '\0' ? str("XRT ", mode, " device") : std::string("XRT device");
  }
  info.kind = card ? DeviceKind::accelerator : DeviceKind::npu;
  info.memory = card ? MemoryModel::discrete : MemoryModel::unified;
  // xrt::bo(device, userptr, size, flags, group): XRT wants the pointer page-aligned; the planner
  // rounds regions to whole pages, as for Level Zero. Whether the driver takes the pages (read-only
  // file pages, older amdxdna stacks) is known only when asked: a refusal is a declined import.
  info.caps.import_host_ptr = !card;
  info.caps.import_alignment = page_size();
  info.caps.size_multiple = page_size();
  info.caps.max_alloc = std::numeric_limits<std::uint64_t>::max();  // XRT has no query for it
  info.caps.sub_buffer_alignment = 1;                               // xrt::bo(parent, size, offset) takes any offset
  info.caps.host_visible_alloc = !card;
  info.caps.pinned_staging = true;       // staging slots are buffer objects the driver pins
  info.caps.import_pins = Pinning::yes;  // "the driver pins and manages userptr" (XRT)
  // device_memory stays 0 (unknown): XRT reports memory banks only with an xclbin loaded.
  const std::string bdf = text_info<::xrt::info::device::bdf>(device);
  info.details = {{"bdf", bdf.empty() ? "not reported" : bdf},
                  {"reported_name", reported.empty() ? "none" : reported},
                  {"memory_from", card               ? "name: a card's platform"
                                  : reported.empty() ? "no name: host memory"
                                                     : "name: not a card's"}};
  return info;
}

}  // namespace

std::vector<FoundDevice> discover(std::string* why) {
  std::vector<FoundDevice> found;
  try {
    // XRT's noop shim counts no devices yet opens device 0: device 0 is always tried (where there
    // is none, opening it throws, and nothing is found).
    const unsigned count = std::max(::xrt::system::enumerate_devices(), 1u);
    for (unsigned i = 0; i < count; ++i) {
      ::xrt::device device(i);
      DeviceInfo info = describe(device, i);
      found.push_back({std::move(device), std::move(info)});
    }
  } catch (const std::exception& e) {
    // No driver shim XRT can load (XILINX_XRT unset, no driver), or a device it lists but cannot
    // open: the devices before it are offered, and XRT's absence is not an error.
    if (why != nullptr && found.empty()) *why = str("XRT: ", e.what());
  }
  return found;
}

DeviceInfo describe_adopted(const ::xrt::device& device) {
  for (const auto& f : discover())
    if (f.device.get_handle() == device.get_handle()) return f.info;
  return describe(device, 0);
}

}  // namespace lwload::xrt_backend
