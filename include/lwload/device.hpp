// What a device reports about itself: the facts the planner decides placements from.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>
#include "lwload/export.h"

namespace lwload {

enum class DeviceKind { cpu, igpu, dgpu, npu, accelerator };
enum class MemoryModel { unified, discrete };

LWLOAD_API std::string_view device_kind_name(DeviceKind kind) noexcept;
LWLOAD_API std::string_view memory_model_name(MemoryModel memory) noexcept;

// Whether importing host memory pins it: pinned pages cannot be evicted or swapped while the import
// lives, so an import that pins holds the machine's memory as an allocation does, and the planner
// counts it against what the machine has (docs/ARCHITECTURE.md "Over-memory loads").
enum class Pinning : std::uint8_t {
  no,       // the device uses the pages as they are; the kernel may evict and fault them back
  yes,      // i915/xe userptr, Vulkan host-pointer imports, Level Zero imports, CUDA host registration
  unknown,  // the driver does not say (an OpenCL driver lwload does not know): counted as pinning
};
LWLOAD_API std::string_view pinning_name(Pinning pinning) noexcept;  // "no", "yes", "unknown"

struct DeviceCaps {
  bool import_host_ptr = false;           // can use mapped file pages in place (zero-copy)
  std::uint64_t import_alignment = 4096;  // pointer alignment an import needs
  std::uint64_t size_multiple = 1;        // an import's size must be a multiple of this
  std::uint64_t max_alloc = std::numeric_limits<std::uint64_t>::max();  // largest allocation/import
  std::uint64_t sub_buffer_alignment = 1;                               // offsets at which a view of a buffer may start
  // Where a zero_copy tensor may start inside its imported region: a multiple of this (an engine's
  // own tensor alignment, e.g. a ggml buffer type's). A tensor whose file offset misses it is not
  // imported in place (direct or staged instead, with the reason). Region starts meet
  // import_alignment, so this is a constraint on file offsets modulo min(both).
  std::uint64_t tensor_alignment = 1;
  // Whether an import pins the pages it uses (Pinning): counted against host memory when it does.
  Pinning import_pins = Pinning::unknown;
  bool host_visible_alloc = false;  // can allocate memory the host writes directly (direct)
  bool pinned_staging = false;      // staging buffers are pinned / DMA-able
  std::uint64_t device_memory = 0;  // device-local bytes; 0 = unknown (no capacity check)
  // Of device_memory, what is free now as the driver reports it (Vulkan VK_EXT_memory_budget's
  // heap budget less usage, CUDA cuMemGetInfo, a CPU device's host memory); 0 = unknown.
  std::uint64_t memory_available = 0;
  // Bytes of host memory the device can import in all (an iGPU's share of system memory: the
  // heap budget that imports count against); 0 = unknown. Going past it loses the device on some
  // drivers instead of failing, so the planner keeps regions under it.
  std::uint64_t import_limit = 0;
  std::uint64_t max_shader_binding = 0;  // largest range a shader binds at once (Vulkan
                                         // maxStorageBufferRange); 0 = no such limit
};

struct DeviceInfo {
  std::string backend;  // "host", "null", "opencl", "level_zero", ...
  std::uint32_t index = 0;
  std::string name;
  DeviceKind kind = DeviceKind::cpu;
  MemoryModel memory = MemoryModel::unified;
  DeviceCaps caps;
  std::vector<std::pair<std::string, std::string>> details;  // extra facts `lwload devices` shows

  std::string id() const { return backend + ":" + std::to_string(index); }
};

// User overrides applied when a device is opened (`--memory discrete`, tests forcing limits).
struct DeviceOverrides {
  std::optional<MemoryModel> memory;
  std::optional<std::uint64_t> max_alloc;
  std::optional<bool> import_host_ptr;
  std::optional<std::uint64_t> device_memory = {};     // lowers what the device reports having
  std::optional<std::uint64_t> memory_available = {};  // lowers what it reports free now
  std::optional<std::uint64_t> import_limit = {};      // lowers how much host memory it may import
  std::optional<Pinning> import_pins = {};             // says whether its imports pin (tests, simulated drivers)
};

}  // namespace lwload
