// Level Zero discovery: drivers → devices → DeviceInfo. Nothing here allocates device memory.
#include "backends/level_zero/discovery.hpp"
#include "core/align.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <mutex>
#include <string>

#include "backends/level_zero/extensions.hpp"

namespace lwload::level_zero {
namespace {

bool initialised() {
  // zeInit may be called repeatedly, but the loader reads its environment once; cache the answer.
  static const bool ok = zeInit(0) == ZE_RESULT_SUCCESS;
  return ok;
}

std::string hex(std::uint64_t v) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(v));
  return text;
}

std::vector<std::string> extension_names(ze_driver_handle_t driver) {
  std::uint32_t count = 0;
  if (zeDriverGetExtensionProperties(driver, &count, nullptr) != ZE_RESULT_SUCCESS || count == 0) return {};
  count = std::min<std::uint32_t>(count, 4096);  // never size a vector from an unchecked driver count
  std::vector<ze_driver_extension_properties_t> props(count);
  if (zeDriverGetExtensionProperties(driver, &count, props.data()) != ZE_RESULT_SUCCESS) return {};
  std::vector<std::string> names;
  for (std::uint32_t i = 0; i < count && i < props.size(); ++i)
    names.emplace_back(props[i].name, strnlen(props[i].name, ZE_MAX_EXTENSION_NAME));
  return names;
}

ImportPath import_path(ze_driver_handle_t driver, const std::vector<std::string>& extensions) {
  void* import_fn = nullptr;
  void* release_fn = nullptr;
  if (zeDriverGetExtensionFunctionAddress(driver, kImportExternalPointerName, &import_fn) == ZE_RESULT_SUCCESS &&
      zeDriverGetExtensionFunctionAddress(driver, kReleaseImportedPointerName, &release_fn) == ZE_RESULT_SUCCESS &&
      import_fn != nullptr && release_fn != nullptr)
    return ImportPath::zex;
  for (const auto& name : extensions)
    if (name == kExternalMemmapSysmemExtName) return ImportPath::memmap;
  return ImportPath::none;
}

// Prefers a copy-only group (a blitter engine), then any group that can copy.
std::uint32_t copy_ordinal(ze_device_handle_t device) {
  std::uint32_t count = 0;
  if (zeDeviceGetCommandQueueGroupProperties(device, &count, nullptr) != ZE_RESULT_SUCCESS || count == 0) return 0;
  count = std::min<std::uint32_t>(count, 64);
  std::vector<ze_command_queue_group_properties_t> groups(count);
  for (auto& g : groups) g = {ZE_STRUCTURE_TYPE_COMMAND_QUEUE_GROUP_PROPERTIES, nullptr, 0, 0, 0};
  if (zeDeviceGetCommandQueueGroupProperties(device, &count, groups.data()) != ZE_RESULT_SUCCESS) return 0;
  std::uint32_t any_copy = std::numeric_limits<std::uint32_t>::max();
  for (std::uint32_t i = 0; i < count && i < groups.size(); ++i) {
    const bool copy = groups[i].flags & ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY;
    const bool compute = groups[i].flags & ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE;
    if (copy && !compute) return i;
    if (copy && any_copy == std::numeric_limits<std::uint32_t>::max()) any_copy = i;
  }
  return any_copy == std::numeric_limits<std::uint32_t>::max() ? 0 : any_copy;
}

std::uint64_t memory_size(ze_device_handle_t device) {
  std::uint32_t count = 0;
  if (zeDeviceGetMemoryProperties(device, &count, nullptr) != ZE_RESULT_SUCCESS || count == 0) return 0;
  count = std::min<std::uint32_t>(count, 64);
  std::vector<ze_device_memory_properties_t> props(count);
  for (auto& p : props) p = {ZE_STRUCTURE_TYPE_DEVICE_MEMORY_PROPERTIES, nullptr, 0, 0, 0, 0, {}};
  if (zeDeviceGetMemoryProperties(device, &count, props.data()) != ZE_RESULT_SUCCESS) return 0;
  std::uint64_t total = 0;
  for (std::uint32_t i = 0; i < count && i < props.size(); ++i) total += props[i].totalSize;
  return total;
}

std::string_view type_name(ze_device_type_t type) {
  switch (type) {
    case ZE_DEVICE_TYPE_GPU: return "GPU";
    case ZE_DEVICE_TYPE_CPU: return "CPU";
    case ZE_DEVICE_TYPE_FPGA: return "FPGA";
    case ZE_DEVICE_TYPE_MCA: return "MCA";
    case ZE_DEVICE_TYPE_VPU: return "VPU";
    default: return "unknown";
  }
}

DeviceKind kind_of(ze_device_type_t type, bool integrated) {
  switch (type) {
    case ZE_DEVICE_TYPE_GPU: return integrated ? DeviceKind::igpu : DeviceKind::dgpu;
    case ZE_DEVICE_TYPE_VPU: return DeviceKind::npu;
    case ZE_DEVICE_TYPE_CPU: return DeviceKind::cpu;
    default: return DeviceKind::accelerator;
  }
}

std::string_view import_name(ImportPath path) {
  switch (path) {
    case ImportPath::zex: return kImportExternalPointerName;
    case ImportPath::memmap: return kExternalMemmapSysmemExtName;
    case ImportPath::none: break;
  }
  return "none";
}

FoundDevice describe(ze_driver_handle_t driver, ze_device_handle_t device, std::uint32_t index,
                     const std::vector<std::string>& extensions, ze_driver_properties_t driver_props) {
  ze_device_properties_t props{};
  props.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES;
  if (zeDeviceGetProperties(device, &props) != ZE_RESULT_SUCCESS) props.type = ZE_DEVICE_TYPE_FORCE_UINT32;
  const bool integrated = props.flags & ZE_DEVICE_PROPERTY_FLAG_INTEGRATED;

  FoundDevice d;
  d.driver = driver;
  d.device = device;
  d.import = integrated ? import_path(driver, extensions) : ImportPath::none;
  d.copy_ordinal = copy_ordinal(device);

  DeviceInfo& info = d.info;
  info.backend = "level_zero";
  info.index = index;
  info.name = std::string(props.name, strnlen(props.name, ZE_MAX_DEVICE_NAME));
  info.kind = kind_of(props.type, integrated);
  info.memory = integrated ? MemoryModel::unified : MemoryModel::discrete;
  info.caps.import_host_ptr = d.import != ImportPath::none;
  info.caps.import_alignment = page_size();
  info.caps.size_multiple = page_size();  // imports are whole pages: the planner rounds regions to them
  info.caps.max_alloc = props.maxMemAllocSize != 0 ? props.maxMemAllocSize : std::numeric_limits<std::uint64_t>::max();
  info.caps.sub_buffer_alignment = 1;  // USM pointers may be offset freely
  info.caps.host_visible_alloc = integrated;
  info.caps.pinned_staging = true;
  // Level Zero imports (zexDriverImportExternalPointer, or a host USM copy) pin: the driver makes a
  // userptr of the pages. DeviceOverrides::import_pins says otherwise (tests).
  info.caps.import_pins = Pinning::yes;
  info.caps.device_memory = memory_size(device);

  std::string joined;
  for (const auto& e : extensions) joined += (joined.empty() ? "" : ",") + e;
  info.details = {{"type", std::string(type_name(props.type))},
                  {"vendor_id", hex(props.vendorId)},
                  {"device_id", hex(props.deviceId)},
                  {"driver_version", hex(driver_props.driverVersion)},
                  {"import", std::string(import_name(d.import))},
                  {"copy_queue_group", std::to_string(d.copy_ordinal)},
                  {"extensions", joined.empty() ? "none" : joined}};
  return d;
}

}  // namespace

std::vector<FoundDevice> discover() {
  std::vector<FoundDevice> found;
  if (!initialised()) return found;
  std::uint32_t driver_count = 0;
  if (zeDriverGet(&driver_count, nullptr) != ZE_RESULT_SUCCESS || driver_count == 0) return found;
  std::vector<ze_driver_handle_t> drivers(std::min<std::uint32_t>(driver_count, 64));
  driver_count = static_cast<std::uint32_t>(drivers.size());
  if (zeDriverGet(&driver_count, drivers.data()) != ZE_RESULT_SUCCESS) return found;
  for (std::uint32_t d = 0; d < driver_count && d < drivers.size(); ++d) {
    ze_driver_properties_t driver_props{};
    driver_props.stype = ZE_STRUCTURE_TYPE_DRIVER_PROPERTIES;
    zeDriverGetProperties(drivers[d], &driver_props);
    const auto extensions = extension_names(drivers[d]);
    std::uint32_t device_count = 0;
    if (zeDeviceGet(drivers[d], &device_count, nullptr) != ZE_RESULT_SUCCESS || device_count == 0) continue;
    std::vector<ze_device_handle_t> devices(std::min<std::uint32_t>(device_count, 256));
    device_count = static_cast<std::uint32_t>(devices.size());
    if (zeDeviceGet(drivers[d], &device_count, devices.data()) != ZE_RESULT_SUCCESS) continue;
    for (std::uint32_t i = 0; i < device_count && i < devices.size(); ++i)
      found.push_back(
          describe(drivers[d], devices[i], static_cast<std::uint32_t>(found.size()), extensions, driver_props));
  }
  return found;
}

}  // namespace lwload::level_zero
