// TEST DOUBLE (see sim.hpp): configuration, driver, device and context entry points of the
// simulated Level Zero driver, plus the counters tests read to check for leaks.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

#include "sim.hpp"

namespace ze_sim {
namespace {

std::int64_t env_int(const char* name, std::int64_t fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  return std::strtoll(text, nullptr, 0);
}

Config read_config() {
  Config c;
  if (const char* mode = std::getenv("LWLOAD_ZE_SIM"); mode != nullptr && *mode != '\0') c.mode = mode;
  if (c.mode == "igpu-import") {
    c.import = ImportKind::zex;
  } else if (c.mode == "igpu") {
    c.import = ImportKind::none;
  } else if (c.mode == "npu") {
    c.type = ZE_DEVICE_TYPE_VPU;
    c.import = ImportKind::memmap;
  } else if (c.mode == "dgpu") {
    c.integrated = false;
    c.import = ImportKind::none;
    c.device_memory = 8ull << 30;
  } else {
    c.has_device = false;  // "none" or anything unknown: a driver without devices
  }
  if (const char* import = std::getenv("LWLOAD_ZE_SIM_IMPORT"); import != nullptr) {
    const std::string_view v(import);
    c.import = v == "zex" ? ImportKind::zex : v == "memmap" ? ImportKind::memmap : ImportKind::none;
  }
  c.max_alloc = static_cast<std::uint64_t>(env_int("LWLOAD_ZE_SIM_MAX_ALLOC", static_cast<std::int64_t>(c.max_alloc)));
  c.device_memory =
      static_cast<std::uint64_t>(env_int("LWLOAD_ZE_SIM_DEVICE_MEMORY", static_cast<std::int64_t>(c.device_memory)));
  c.fail_alloc_after = env_int("LWLOAD_ZE_SIM_FAIL_ALLOC_AFTER", -1);
  c.fail_copy_at = env_int("LWLOAD_ZE_SIM_FAIL_COPY_AT", -1);
  c.lose_device_at = env_int("LWLOAD_ZE_SIM_LOSE_DEVICE_AT", -1);
  c.refuse_import = env_int("LWLOAD_ZE_SIM_REFUSE_IMPORT", 0) != 0;
  if (const char* with = std::getenv("LWLOAD_ZE_SIM_REFUSE_IMPORT_WITH"); with != nullptr) {
    const std::string_view w(with);
    c.refusal = w == "unsupported_feature"     ? ZE_RESULT_ERROR_UNSUPPORTED_FEATURE
                : w == "unsupported_alignment" ? ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT
                : w == "unsupported_size"      ? ZE_RESULT_ERROR_UNSUPPORTED_SIZE
                : w == "invalid_size"          ? ZE_RESULT_ERROR_INVALID_SIZE
                                               : ZE_RESULT_ERROR_INVALID_ARGUMENT;
  }
  return c;
}

_ze_driver_handle_t the_driver;
_ze_device_handle_t the_device;

void copy_name(char* dst, std::size_t capacity, std::string_view name) {
  const std::size_t n = std::min(capacity - 1, name.size());
  std::memcpy(dst, name.data(), n);
  dst[n] = '\0';
}

}  // namespace

const Config& config() {
  static const Config c = read_config();
  return c;
}

Counters& counters() {
  static Counters c;
  return c;
}

std::atomic<bool>& device_lost() {
  static std::atomic<bool> lost{false};
  return lost;
}

// ---- entry points (wired into the DDI tables by sim_tables.cpp) ----

ze_result_t ZE_APICALL sim_zeInit(ze_init_flags_t) { return ZE_RESULT_SUCCESS; }

ze_result_t ZE_APICALL sim_zeDriverGet(uint32_t* count, ze_driver_handle_t* drivers) {
  if (count == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (*count == 0 || drivers == nullptr) {
    *count = 1;
    return ZE_RESULT_SUCCESS;
  }
  drivers[0] = &the_driver;
  *count = 1;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL sim_zeDriverGetApiVersion(ze_driver_handle_t, ze_api_version_t* version) {
  *version = ZE_API_VERSION_CURRENT;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL sim_zeDriverGetProperties(ze_driver_handle_t, ze_driver_properties_t* props) {
  if (props == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  std::memset(&props->uuid, 0x5a, sizeof(props->uuid));
  props->driverVersion = 0x00010001;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL sim_zeDriverGetIpcProperties(ze_driver_handle_t, ze_driver_ipc_properties_t* props) {
  props->flags = 0;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL sim_zeDriverGetExtensionProperties(ze_driver_handle_t, uint32_t* count,
                                                          ze_driver_extension_properties_t* props) {
  std::vector<std::string_view> names{"ZE_experimental_lwload_simulated_driver"};
  if (config().import == ImportKind::memmap) names.push_back("ZE_extension_external_memmap_sysmem");
  if (*count == 0 || props == nullptr) {
    *count = static_cast<uint32_t>(names.size());
    return ZE_RESULT_SUCCESS;
  }
  const uint32_t n = std::min<uint32_t>(*count, static_cast<uint32_t>(names.size()));
  for (uint32_t i = 0; i < n; ++i) {
    copy_name(props[i].name, ZE_MAX_EXTENSION_NAME, names[i]);
    props[i].version = ZE_MAKE_VERSION(1, 0);
  }
  *count = n;
  return ZE_RESULT_SUCCESS;
}

// Intel's import extension functions, reachable only through zeDriverGetExtensionFunctionAddress.
ze_result_t ZE_APICALL sim_zexDriverImportExternalPointer(ze_driver_handle_t, void* ptr, size_t size) {
  return import_pointer(ptr, size);
}
ze_result_t ZE_APICALL sim_zexDriverReleaseImportedPointer(ze_driver_handle_t, void* ptr) {
  return release_import(ptr);
}

ze_result_t ZE_APICALL sim_zeDriverGetExtensionFunctionAddress(ze_driver_handle_t, const char* name, void** address) {
  if (name == nullptr || address == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  *address = nullptr;
  if (config().import == ImportKind::zex) {
    if (std::strcmp(name, "zexDriverImportExternalPointer") == 0)
      *address = reinterpret_cast<void*>(&sim_zexDriverImportExternalPointer);
    if (std::strcmp(name, "zexDriverReleaseImportedPointer") == 0)
      *address = reinterpret_cast<void*>(&sim_zexDriverReleaseImportedPointer);
  }
  return *address != nullptr ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_INVALID_ARGUMENT;
}

ze_result_t ZE_APICALL sim_zeDeviceGet(ze_driver_handle_t, uint32_t* count, ze_device_handle_t* devices) {
  const uint32_t available = config().has_device ? 1 : 0;
  if (*count == 0 || devices == nullptr) {
    *count = available;
    return ZE_RESULT_SUCCESS;
  }
  if (available > 0) devices[0] = &the_device;
  *count = std::min(*count, available);
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL sim_zeDeviceGetSubDevices(ze_device_handle_t, uint32_t* count, ze_device_handle_t*) {
  *count = 0;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL sim_zeDeviceGetProperties(ze_device_handle_t, ze_device_properties_t* p) {
  if (p == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  const Config& c = config();
  p->type = c.type;
  p->vendorId = 0x8086;
  p->deviceId = c.type == ZE_DEVICE_TYPE_VPU ? 0x7d1d : c.integrated ? 0x7d55 : 0x56a0;
  p->flags = c.integrated ? ZE_DEVICE_PROPERTY_FLAG_INTEGRATED : 0;
  p->subdeviceId = 0;
  p->coreClockRate = 1000;
  p->maxMemAllocSize = c.max_alloc;
  p->maxHardwareContexts = 64;
  p->maxCommandQueuePriority = 0;
  p->numThreadsPerEU = 8;
  p->physicalEUSimdWidth = 8;
  p->numEUsPerSubslice = 8;
  p->numSubslicesPerSlice = 4;
  p->numSlices = 1;
  p->timerResolution = 1;
  p->timestampValidBits = 64;
  p->kernelTimestampValidBits = 32;
  std::memset(&p->uuid, 0x11, sizeof(p->uuid));
  copy_name(p->name, ZE_MAX_DEVICE_NAME, "lwload simulated " + c.mode + " (test double)");
  return ZE_RESULT_SUCCESS;
}

// A discrete device reports its memory as two regions (one per tile, as a two-tile card does),
// whose sizes add up to the device's memory; an integrated one, the shared memory as one.
ze_result_t ZE_APICALL sim_zeDeviceGetMemoryProperties(ze_device_handle_t, uint32_t* count,
                                                       ze_device_memory_properties_t* props) {
  const std::uint32_t regions = config().integrated ? 1 : 2;
  if (*count == 0 || props == nullptr) {
    *count = regions;
    return ZE_RESULT_SUCCESS;
  }
  const std::uint32_t n = std::min(*count, regions);
  for (std::uint32_t i = 0; i < n; ++i) {
    props[i].flags = 0;
    props[i].maxClockRate = 0;
    props[i].maxBusWidth = 64;
    const std::uint64_t half = config().device_memory / 2;
    props[i].totalSize = regions == 1 ? config().device_memory : i == 0 ? half : config().device_memory - half;
    copy_name(props[i].name, ZE_MAX_DEVICE_NAME,
              config().integrated ? "DDR (shared)"
              : i == 0            ? "HBM tile 0 (memfd)"
                                  : "HBM tile 1 (memfd)");
  }
  *count = n;
  return ZE_RESULT_SUCCESS;
}

// Group 0 computes and copies; group 1 is a copy-only engine, like a real blitter.
ze_result_t ZE_APICALL sim_zeDeviceGetCommandQueueGroupProperties(ze_device_handle_t, uint32_t* count,
                                                                  ze_command_queue_group_properties_t* props) {
  if (*count == 0 || props == nullptr) {
    *count = 2;
    return ZE_RESULT_SUCCESS;
  }
  const ze_command_queue_group_property_flags_t flags[2] = {
      ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE | ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY,
      ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY};
  const uint32_t n = std::min<uint32_t>(*count, 2);
  for (uint32_t i = 0; i < n; ++i) {
    props[i].flags = flags[i];
    props[i].maxMemoryFillPatternSize = 4;
    props[i].numQueues = 1;
  }
  *count = n;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL sim_zeContextCreate(ze_driver_handle_t, const ze_context_desc_t*, ze_context_handle_t* out) {
  if (out == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  *out = new _ze_context_handle_t;
  ++counters().contexts;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL sim_zeContextDestroy(ze_context_handle_t context) {
  if (context == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  delete context;
  --counters().contexts;
  return ZE_RESULT_SUCCESS;
}

}  // namespace ze_sim

// Test hooks, found with dlsym on the already-loaded driver library.
extern "C" __attribute__((visibility("default"))) long long lwload_ze_sim_live_objects() {
  auto& c = ze_sim::counters();
  return c.contexts + c.command_lists + c.event_pools + c.events + c.host_allocations + c.device_allocations +
         c.imports;
}

extern "C" __attribute__((visibility("default"))) void lwload_ze_sim_describe(char* out, unsigned long capacity) {
  auto& c = ze_sim::counters();
  std::snprintf(out, capacity,
                "contexts=%lld lists=%lld pools=%lld events=%lld host_allocs=%lld device_allocs=%lld imports=%lld "
                "copies=%lld device_peak=%llu",
                static_cast<long long>(c.contexts), static_cast<long long>(c.command_lists),
                static_cast<long long>(c.event_pools), static_cast<long long>(c.events),
                static_cast<long long>(c.host_allocations), static_cast<long long>(c.device_allocations),
                static_cast<long long>(c.imports), static_cast<long long>(c.copies),
                static_cast<unsigned long long>(c.device_bytes_peak));
}
