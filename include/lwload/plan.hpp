// The planner: manifest × device capabilities × options → where each tensor goes and why, how its
// bytes move (the schedule), and what the load will cost in host and device memory. Nothing is
// allocated and no file is opened: the planner only asks the kernel what of the files the manifest
// keeps open is in the page cache (and, when io_uring is asked for, whether the kernel has it), so a
// plan that does not fit fails before the first allocation (docs/ARCHITECTURE.md, "Memory
// contracts"). `lwload plan` prints it; the loader executes it as it stands.
#pragma once

// Layer plan's public header: refused below plan in lwload's build (docs/ARCHITECTURE.md, "Layers").
#if defined(LWLOAD_LAYER_CORE) && !defined(LWLOAD_LAYER_PLAN)
#error \
    "lwload layering: include/lwload/plan.hpp (layer plan) is not below this layer (the layer table in meson.build says what each layer may include)"
#endif

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lwload/device.hpp"
#include "lwload/io_engine.hpp"
#include "lwload/machine.hpp"
#include "lwload/manifest.hpp"
#include "lwload/tensor_handle.hpp"
#include "lwload/export.h"

namespace lwload {

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
  IoEngine io = IoEngine::auto_;  // the read engine (`--io`)
  std::uint32_t io_threads = 0;   // pread engine threads; 0 = slots clamped to 2..4
  // zero_copy tensors are ready once imported; their pages fault in on first use (`--lazy`,
  // LoadOptions::lazy). Mapped pages that stay evictable then need not fit the machine's memory.
  bool lazy = false;
  // The machine the plan is checked against; nullopt: read it now (machine_memory()).
  std::optional<MachineMemory> machine;
};

// How much of one file the plan reads is in the page cache, measured when the plan was made.
struct FileResidency {
  bool known = false;        // false: the file has no descriptor (memory) or was not opened
  std::uint64_t span = 0;    // bytes from the first to the last byte the plan reads from it
  std::uint64_t cached = 0;  // of `span`, in the page cache
  // How it is known: counted (cachestat(2), or mincore(2) over every page of a span of at most
  // `samples`' bound) or, on kernels before 6.5, estimated from `samples` pages spread evenly over
  // the span, one mincore each: a cost that does not grow with the file, within about one sample's
  // share of the span where cached pages come in runs (files are read and evicted in runs).
  bool exact = true;
  std::uint32_t samples = 0;  // exact false: the kernel pages sampled; 0 when counted
};

// What a load will hold of the host's memory, by kind, and what the machine has: the plan's side
// of docs/ARCHITECTURE.md "Over-memory loads". Every figure is decided before anything is read.
struct HostMemory {
  // Cannot be evicted while the load lives: imports on a device whose imports pin, a unified GPU's
  // allocations, pinned staging slots.
  std::uint64_t pinned = 0;
  std::uint64_t pinned_imports = 0;  // of `pinned`, imported regions
  // Of `pinned`, a unified GPU's own allocations (direct, staged). Held to the budget its driver
  // reports (DeviceCaps::memory_available, checked with the device), else to host memory.
  std::uint64_t device_allocations = 0;
  std::uint64_t evictable = 0;  // mapped file pages that stay evictable (imports that do not pin)
  std::uint64_t anonymous =
      0;  // the process's own memory: a CPU device's allocations, unpinned staging, decode scratch
  // Host memory that must be resident at once when the load is ready: what is compared with
  // MachineMemory::host_available(). Evictable pages count unless lazy.
  std::uint64_t resident = 0;
  std::uint64_t address_space = 0;  // bytes the load maps into the process (compared with RLIMIT_AS)
  bool lazy = false;                // PlanOptions::lazy
  bool resident_at_ready = true;    // false: lazy with evictable pages, which fault in on first use
  MachineMemory machine;            // what the plan was checked against
  std::string verdict;              // the rule applied, with the numbers
};

// A range of one file imported into the device as one buffer. It *covers* its tensors: it starts
// at the import alignment at or below its first tensor and ends at the size multiple at or above
// its last, so tensors at any offset (GGUF's 32 bytes, packed safetensors) are zero_copy, each
// addressed as (region buffer, offset inside it). Neighbouring regions may share a page. The
// geometry is decided here once: the loader maps [offset, +used) — which takes the whole pages
// [map_offset, +map_length) — and imports [offset, +length), which the planner checked lies in
// those pages; the profiler counts map_length.
struct ImportRegion {
  std::uint32_t file = 0;            // index into Manifest::files
  std::uint64_t offset = 0;          // file offset, a multiple of import_alignment
  std::uint64_t length = 0;          // bytes imported: `used` rounded up to size_multiple, ≤ max_alloc
  std::uint64_t used = 0;            // bytes from `offset` to the end of the last tensor
  std::uint64_t map_offset = 0;      // the whole pages mapped for it: `offset` rounded down to a page...
  std::uint64_t map_length = 0;      // ...to `offset + used` rounded up to one (holds `length`)
  std::vector<std::size_t> tensors;  // the tensors it holds (Plan::tensors = Manifest::tensors index), in file order
  std::uint64_t cached = 0;          // of `length`, in the page cache when planned (population reads the rest)
  // Why the region is not imported (the device or its import budget declined it, at plan or at
  // load time); its tensors then went direct or staged. A declined region keeps its number, so
  // TensorPlan::region never changes meaning; `tensors` and `length` are then empty.
  std::string declined;
  bool imported() const noexcept { return declined.empty(); }
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

// The part of a read that belongs to one tensor: `length` bytes at `read_offset` into the read go
// to `dst_offset` in the tensor's buffer.
struct ReadSegment {
  std::size_t tensor = 0;
  std::uint64_t read_offset = 0;
  std::uint64_t dst_offset = 0;
  std::uint64_t length = 0;
};

// One read of the schedule.
struct Read {
  enum class Kind : std::uint8_t {
    direct,  // straight into one direct tensor's host-visible buffer (one segment)
    run,     // neighbouring small direct tensors read as one into scratch, each segment copied
    staged,  // into a staging slot (neighbouring tensors coalesced), each segment uploaded
  };
  Kind kind = Kind::direct;
  // The bytes come from decoding the tensor on the host (ONNX typed fields; `offset` is into the
  // decoded bytes), not from one read of the file.
  bool decoded = false;
  std::uint32_t file = 0;    // index into Manifest::files
  std::uint64_t offset = 0;  // first wanted byte
  std::uint64_t length = 0;  // wanted bytes from `offset`, gaps between segments included
  std::vector<ReadSegment> segments;
  // What the reader asks the file for, decided with the read (the loader works out nothing):
  // [offset, +length) itself, except a staged read with O_DIRECT (Plan::direct_io), widened to
  // whole blocks (4096) at both ends — the wanted bytes then start `offset - extent_offset` into
  // the slot, which holds the extent (staged reads leave a block of slack at each end).
  std::uint64_t extent_offset = 0;
  std::uint64_t extent_length = 0;
};

// How the direct and staged bytes move, decided with the placements: the read engine, and the
// reads in queues — one per manifest file (so several files are read at once), in load order
// within each, then one for decoded tensors. Staged reads coalesce neighbours up to a slot (less
// the O_DIRECT slack); small direct tensors coalesce into runs (a million one-element tensors are a
// few hundred reads, not a million).
struct Schedule {
  IoEngine engine = IoEngine::pread;  // io_uring or pread
  std::string engine_reason;          // why, in words
  std::uint32_t queue_depth = 0;      // reads in flight at once (io_uring)
  std::uint32_t threads = 0;          // pread threads
  std::uint64_t run_scratch = 0;      // bytes of scratch runs may hold at once
  std::vector<std::vector<Read>> queues;
  std::size_t reads() const noexcept;
};

// One per manifest tensor, at the same index: a tensor's number is the same in Manifest::tensors,
// Plan::tensors, Weights::tensors(), LoadEvent::tensor, ImportRegion::tensors and every part of
// the loader (docs/ARCHITECTURE.md, "One index").
struct TensorPlan {
  Placement placement = Placement::staged;
  bool selected = true;             // false: left out by PlanOptions::only (skipped, "not selected")
  std::string reason;               // "offset 1000 not aligned to 4096 → direct"
  std::size_t region = no_region;   // zero_copy: index into Plan::regions
  std::uint64_t region_offset = 0;  // zero_copy: tensor offset inside its region
};

struct LWLOAD_API Plan {
  std::string device;  // DeviceInfo::id()
  MemoryModel memory = MemoryModel::unified;
  std::vector<TensorPlan> tensors;    // per manifest tensor (unselected ones skipped): the load order
  std::vector<ImportRegion> regions;  // imported ones and declined ones (ImportRegion::declined)
  std::uint64_t model_bytes = 0;      // bytes of the selected, loadable tensors
  std::uint64_t largest_tensor = 0;   // largest selected tensor
  std::uint64_t mapped_bytes = 0;     // imported (zero_copy) bytes: file-backed, not allocated
  std::uint64_t device_bytes = 0;     // allocated device memory (direct + staged)
  std::uint64_t staging_budget = 0;   // 0 when nothing is staged
  std::uint32_t staging_slots = 0;
  std::uint64_t slot_bytes = 0;    // one slot (page multiple)
  PlanOptions options;             // what it was made with (a re-plan decides with them again)
  std::uint64_t decode_bytes = 0;  // host scratch of the largest decode: encoded bytes, + decoded ones when staged
  std::vector<FileResidency> residency;  // per Manifest::files entry
  bool direct_io = false;                // staged tensors are read with O_DIRECT
  std::string direct_io_reason;          // why (or why not), in words
  Schedule schedule;                     // the reads, in order, and how they are issued
  // Predicted growth of the process's memory over its baseline during the load (docs/ARCHITECTURE.md,
  // "Memory contracts"): mapped + in-process allocations (unified) + staging + decode scratch.
  std::uint64_t predicted_host_peak = 0;
  HostMemory host;  // pinned / evictable / anonymous bytes against the machine

  std::size_t count(Placement placement) const noexcept;
  std::size_t imported_regions() const noexcept;  // regions not declined
  std::uint64_t bytes(Placement placement, const Manifest& manifest) const noexcept;
};

// Throws Error(does_not_fit) with the numbers when the selected tensors cannot fit the device
// (caps.device_memory, caps.max_alloc), the staging budget is too small for its slots, or the load
// does not fit the machine (docs/ARCHITECTURE.md "Over-memory loads": host memory, cgroup limits, RLIMIT_AS), and
// Error(usage) for an unknown `only` name or a placement the device cannot do at all. Imports
// that pin and would not fit host memory, or mappings past RLIMIT_AS, fall back to direct or
// staged first, with the reason. A refusal comes before any file byte is read.
LWLOAD_API Plan make_plan(const Manifest& manifest, const DeviceInfo& device, const PlanOptions& options = {});

// The decode rule (docs/ARCHITECTURE.md "Over-memory loads"), one for `lwload inspect` and every load: decoding
// an encoded tensor (TensorInfo::encoding != raw: a sparse tensor densified, ONNX typed fields, a
// strided copy) holds at once its encoded bytes, read into host scratch, and its decoded bytes
// (TensorInfo::bytes), written into host scratch (staged) or straight into its host-visible buffer
// (direct); tensors are decoded one at a time. Each such tensor's encoded + decoded bytes must fit
// the host memory `machine` has available (MemAvailable, cgroup headroom) and the address space
// RLIMIT_AS leaves; no ratio of decoded to encoded bytes is refused as such. Throws
// Error(does_not_fit) naming the file, the tensor and the sizes ("densifying tensor 'w' needs N
// bytes at once ... leaves M") for the first tensor that does not fit, and Error(bad_input) for an
// ONNX-typed or strided tensor claiming more bytes than its encoding can make of its encoded ones
// (at least one encoded byte per element). Figures `machine` does not know (0) check nothing;
// STRING and empty tensors, which no load decodes, are passed over. make_plan applies it to the
// tensors it selects before any other check of the plan; `lwload inspect` to every tensor.
LWLOAD_API void check_decodes_fit(const Manifest& manifest, const MachineMemory& machine);

// A region the device declined at load time, and the device's reason.
struct DeclinedRegion {
  std::size_t region = 0;  // index into Plan::regions
  std::string why;
};

// Re-plans after the device declined some imports: each declined region's tensors become direct
// (staged where the device has no host-visible memory) with the reason appended, the regions are
// marked declined (keeping their numbers, as every tensor keeps its own), and every total and
// the schedule — device bytes, staging ring, reads, predicted peak — is made again, so the
// executed plan stays self-consistent. Throws Error(does_not_fit) when the re-planned load no
// longer fits.
LWLOAD_API void replan_declined(Plan& plan, const Manifest& manifest, const DeviceInfo& device,
                                const std::vector<DeclinedRegion>& declined);

// {"device", "memory", "model_bytes", "largest_tensor", "mapped_bytes", "device_bytes",
//  "staging": {"budget", "slots", "slot_bytes"}, "decode_bytes", "predicted_host_peak",
//  "host_memory": {"pinned", "pinned_imports", "device_allocations", "evictable", "anonymous", "resident",
//                  "address_space", "lazy", "resident_at_ready", "available", "bound_by", "mem_available",
//                  "cgroup_limit", "cgroup", "address_space_left" (null: unlimited), "verdict"},
//  "counts": {"zero_copy", "direct", "staged", "skipped"}, "page_cache": [{"span", "cached", "exact", "samples"} or
//  null], "direct_io": {"used", "reason"}, "schedule": {"engine", "engine_reason", "reads", "queues": [reads]},
//  "regions": [{"file", "offset", "length", "used", "map_offset", "map_length", "cached", "tensors": [names],
//               "declined" (only when declined)}],
//  "tensors": [{"name", "bytes", "placement", "reason", "region", "region_offset"}]}
LWLOAD_API std::string plan_to_json(const Plan& plan, const Manifest& manifest);

}  // namespace lwload
