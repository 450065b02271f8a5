// Finding Level Zero devices: zeInit once per process, then every driver's devices described as
// lwload DeviceInfo (kind, unified/discrete memory, limits, extensions, how host memory is imported).
#pragma once

#include "backends/level_zero/layer.hpp"

#include <level_zero/ze_api.h>

#include <cstdint>
#include <vector>

#include "lwload/device.hpp"

namespace lwload::level_zero {

// How a driver lets the device use existing host pages in place.
enum class ImportPath {
  none,
  zex,     // Intel's zexDriverImportExternalPointer / zexDriverReleaseImportedPointer
  memmap,  // ze_external_memmap_sysmem_ext_desc_t chained into zeMemAllocHost
};

struct FoundDevice {
  ze_driver_handle_t driver = nullptr;
  ze_device_handle_t device = nullptr;
  DeviceInfo info;
  ImportPath import = ImportPath::none;
  std::uint32_t copy_ordinal = 0;  // command queue group used for copies (a copy engine if any)
};

// Every device of every driver; empty when no driver is installed (zeInit fails). Indices in
// DeviceInfo::index follow this order, which the loader keeps stable within a process.
std::vector<FoundDevice> discover();

}  // namespace lwload::level_zero
