// The planner: manifest × device capabilities × options → where each tensor goes and why, and what
// the load will cost in host and device memory. Pure computation: nothing is opened, mapped or
// allocated, so a plan that does not fit fails before the first allocation (docs/ARCHITECTURE.md, "Memory
// contracts"). `lwload plan` prints it; the loader executes it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lwload/device.hpp"
#include "lwload/manifest.hpp"
#include "lwload/export.h"

namespace lwload {

enum class Placement : std::uint8_t {
  zero_copy,  // the device uses the file's mapped pages (an ImportRegion)
  direct,     // host-visible device memory the file is read straight into
  staged,     // device-local memory filled through the staging ring
  skipped,    // not loaded (STRING tensors, empty tensors); the reason says why
};

// "zero_copy", "direct", "staged", "skipped".
LWLOAD_API std::string_view placement_name(Placement placement) noexcept;
// "auto" → nullopt; "zero-copy"/"zero_copy", "direct", "staged". Throws Error(usage) otherwise.
LWLOAD_API std::optional<Placement> parse_placement(std::string_view text);

inline constexpr std::size_t no_region = std::numeric_limits<std::size_t>::max();

struct PlanOptions {
  // Forces a placement where the device allows it (staged always works; zero_copy falls back per
  // tensor, with the reason, where a tensor cannot be imported). nullopt = the best per tensor.
  std::optional<Placement> force;
  std::uint64_t staging_budget = 64ull << 20;  // bytes of staging memory in all
  std::uint32_t staging_slots = 4;             // the ring's slot count (budget / slots each)
  std::vector<std::string> only;               // tensor names to load; empty = all
  // O_DIRECT for staged reads (`--direct-io`). nullopt: the plan decides from the page cache — on
  // when most of the staged tensors' bytes are not cached (a cold file: O_DIRECT skips filling the
  // cache and reads at the disk's speed), off when they are (buffered reads copy from the cache).
  std::optional<bool> direct_io;
};

// How much of one file the plan reads is in the page cache, measured when the plan was made.
struct FileResidency {
  bool known = false;         // false: the file has no descriptor (memory) or was not opened
  std::uint64_t span = 0;     // bytes from the first to the last byte the plan reads from it
  std::uint64_t cached = 0;   // of `span`, in the page cache (sampled beyond 64 MiB)
};

// A range of one file imported into the device as one buffer. It *covers* its tensors: it starts
// at the import alignment at or below its first tensor and ends at the size multiple at or above
// its last, so tensors at any offset (GGUF's 32 bytes, packed safetensors) are zero_copy, each
// addressed as (region buffer, offset inside it). Neighbouring regions may share a page.
struct ImportRegion {
  std::uint32_t file = 0;      // index into Manifest::files
  std::uint64_t offset = 0;    // file offset, a multiple of import_alignment
  std::uint64_t length = 0;    // bytes imported: `used` rounded up to size_multiple, ≤ max_alloc
  std::uint64_t used = 0;      // bytes from `offset` to the end of the last tensor
  std::vector<std::size_t> tensors;  // manifest indices, in file order
  std::uint64_t cached = 0;    // of `length`, in the page cache when planned (population reads the rest)
};

// The staging ring: `slots` buffers of `slot_bytes` each (whole pages), `budget` = their sum.
struct StagingShape {
  std::uint64_t budget = 0;
  std::uint32_t slots = 0;
  std::uint64_t slot_bytes = 0;
};

// The ring for `staged_bytes` of staged tensors within `budget` bytes in `slots` slots: a model
// smaller than the budget gets no more than it needs. Throws Error(does_not_fit) when a slot
// would be smaller than a page; {} when nothing is staged.
LWLOAD_API StagingShape staging_shape(std::uint64_t staged_bytes, std::uint64_t budget, std::uint32_t slots);

struct TensorPlan {
  std::size_t tensor = 0;       // index into Manifest::tensors
  Placement placement = Placement::staged;
  std::string reason;           // "offset 1000 not aligned to 4096 → direct"
  std::size_t region = no_region;     // zero_copy: index into Plan::regions
  std::uint64_t region_offset = 0;    // zero_copy: tensor offset inside its region
};

struct LWLOAD_API Plan {
  std::string device;                  // DeviceInfo::id()
  MemoryModel memory = MemoryModel::unified;
  std::vector<TensorPlan> tensors;     // the selected tensors, in manifest order (the load order)
  std::vector<ImportRegion> regions;
  std::uint64_t model_bytes = 0;       // bytes of the selected, loadable tensors
  std::uint64_t largest_tensor = 0;    // largest selected tensor
  std::uint64_t mapped_bytes = 0;      // imported (zero_copy) bytes: file-backed, not allocated
  std::uint64_t device_bytes = 0;      // allocated device memory (direct + staged)
  std::uint64_t staging_budget = 0;    // 0 when nothing is staged
  std::uint32_t staging_slots = 0;
  std::uint64_t slot_bytes = 0;        // one slot (page multiple)
  // What the caller allowed for staging (PlanOptions), kept so a re-plan can size a ring later.
  std::uint64_t staging_budget_limit = 0;
  std::uint32_t staging_slots_limit = 0;
  std::optional<bool> direct_io_asked;  // PlanOptions::direct_io, kept for a re-plan
  std::uint64_t decode_bytes = 0;      // host scratch for the largest encoded tensor (ONNX typed)
  std::vector<FileResidency> residency;  // per Manifest::files entry
  bool direct_io = false;              // staged tensors are read with O_DIRECT
  std::string direct_io_reason;        // why (or why not), in words
  // Predicted growth of the process's memory over its baseline during the load (docs/ARCHITECTURE.md,
  // "Memory contracts"): mapped + in-process allocations (unified) + staging + decode scratch.
  std::uint64_t predicted_host_peak = 0;

  std::size_t count(Placement placement) const noexcept;
  std::uint64_t bytes(Placement placement, const Manifest& manifest) const noexcept;
  const TensorPlan* find(std::size_t tensor) const noexcept;
};

// Throws Error(does_not_fit) with the numbers when the selected tensors cannot fit the device
// (caps.device_memory, caps.max_alloc) or the staging budget is too small for its slots, and
// Error(usage) for an unknown `only` name or a placement the device cannot do at all.
LWLOAD_API Plan make_plan(const Manifest& manifest, const DeviceInfo& device, const PlanOptions& options = {});

// A region the device declined at load time, and the device's reason.
struct DeclinedRegion {
  std::size_t region = 0;  // index into Plan::regions
  std::string why;
};

// Re-plans after the device declined some imports: each declined region's tensors become direct
// (staged where the device has no host-visible memory) with the reason appended, the regions
// are removed, and every total — device bytes, staging ring, predicted peak — is recomputed, so
// the executed plan stays self-consistent. Returns, per old region index, its new index or
// no_region. Throws Error(does_not_fit) when the re-planned load no longer fits.
LWLOAD_API std::vector<std::size_t> replan_declined(Plan& plan, const Manifest& manifest, const DeviceInfo& device,
                                         const std::vector<DeclinedRegion>& declined);

// {"device", "memory", "model_bytes", "largest_tensor", "mapped_bytes", "device_bytes",
//  "staging": {"budget", "slots", "slot_bytes"}, "decode_bytes", "predicted_host_peak",
//  "counts": {"zero_copy", "direct", "staged", "skipped"},
//  "regions": [{"file", "offset", "length", "used", "tensors": [names]}],
//  "tensors": [{"name", "bytes", "placement", "reason", "region", "region_offset"}]}
LWLOAD_API std::string plan_to_json(const Plan& plan, const Manifest& manifest);

}  // namespace lwload
