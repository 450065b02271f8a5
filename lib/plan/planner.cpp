// The planner (docs/ARCHITECTURE.md "Placement"): decides per tensor zero_copy / direct / staged / skipped
// with a reason a person can act on, groups page-aligned neighbours into imported regions, and
// checks that the whole plan fits the device and the staging budget before anything is allocated.
#include <algorithm>
#include <cstdio>

#include "core/align.hpp"
#include "core/checked.hpp"
#include "io/page_cache.hpp"
#include "lwload/error.hpp"
#include "lwload/plan.hpp"
#include "plan/replan.hpp"
#include "plan/schedule.hpp"

namespace lwload {
namespace {

// Staging slots are whole O_DIRECT blocks (pinned memory wants pages; 4096 serves both).
constexpr std::uint64_t kSlotAlignment = kDirectIoAlignment;
// Neighbouring zero_copy tensors share a region when the bytes between them are at most this many:
// mapping a little padding costs nothing, a region per tensor costs an import each.
constexpr std::uint64_t kMaxRegionGap = kBridgedGap;

std::uint64_t encoded_length(const TensorInfo& t) {
  std::uint64_t total = 0;
  for (const auto& p : t.pieces) total = checked_add(total, p.length, str("tensor '", t.name, "' encoded bytes"));
  return total;
}

// Per manifest tensor, whether to plan it (PlanOptions::only; all when empty).
std::vector<bool> select(const Manifest& manifest, const PlanOptions& options) {
  if (options.only.empty()) return std::vector<bool>(manifest.tensors.size(), true);
  std::vector<bool> chosen(manifest.tensors.size(), false);
  for (const auto& name : options.only) {
    const TensorInfo* t = manifest.find(name);
    if (!t) fail(ErrorCode::usage, "tensor '", name, "' is not in the model (", manifest.tensors.size(), " tensors)");
    chosen[static_cast<std::size_t>(t - manifest.tensors.data())] = true;
  }
  return chosen;
}

struct Capabilities {
  bool zero_copy;  // unified memory that can import host pages
  bool direct;     // host-visible allocations
};

// The placement for a tensor that cannot be zero_copy (or was not asked to be).
Placement fallback(const DeviceInfo& device, const Capabilities& can, const PlanOptions& options) {
  if (options.force == Placement::staged) return Placement::staged;
  if (options.force == Placement::direct) return Placement::direct;  // checked possible
  return can.direct && device.memory == MemoryModel::unified ? Placement::direct : Placement::staged;
}

std::string arrow(Placement p) { return str(" → ", placement_name(p)); }

// Why a zero_copy-capable device cannot import this tensor in place; empty when it can. Any offset
// will do: the region covering the tensor starts at the import alignment below it.
std::string zero_copy_obstacle(const TensorInfo& t, const DeviceCaps& caps) {
  if (t.encoding != Encoding::raw) return str(encoding_name(t.encoding), " encoding is decoded on the host");
  if (t.pieces.size() != 1) return str("split across ", t.pieces.size(), " pieces");
  const Piece& piece = t.pieces.front();
  if (caps.tensor_alignment > 1 && piece.offset % caps.tensor_alignment != 0)
    return str("offset ", piece.offset, " is not a multiple of the device's tensor alignment (", caps.tensor_alignment,
               ")");
  const std::uint64_t head = piece.offset - align_down(piece.offset, caps.import_alignment);
  const std::uint64_t smallest_region = align_up(head + piece.length, caps.size_multiple);
  if (smallest_region > caps.max_alloc)
    return str("the smallest region covering it (", smallest_region, " bytes) exceeds the device's largest import (",
               caps.max_alloc, ")");
  return {};
}

// Groups the zero_copy tensors (sorted by file, offset) into covering regions ≤ max_alloc; a
// region boundary always falls between two tensors.
void group_regions(const Manifest& manifest, const DeviceCaps& caps, Plan& plan) {
  std::vector<std::size_t> candidates;
  for (std::size_t i = 0; i < plan.tensors.size(); ++i)
    if (plan.tensors[i].placement == Placement::zero_copy) candidates.push_back(i);
  std::sort(candidates.begin(), candidates.end(), [&](std::size_t a, std::size_t b) {
    const Piece& pa = manifest.tensors[a].pieces.front();
    const Piece& pb = manifest.tensors[b].pieces.front();
    return pa.file != pb.file ? pa.file < pb.file : pa.offset < pb.offset;
  });
  ImportRegion* open = nullptr;
  for (std::size_t index : candidates) {
    TensorPlan* tp = &plan.tensors[index];
    const Piece& piece = manifest.tensors[index].pieces.front();
    const std::uint64_t end = piece.offset + piece.length;  // the reader checked it fits 64 bits
    if (open && open->file == piece.file && piece.offset <= open->offset + open->used + kMaxRegionGap) {
      const std::uint64_t used = std::max(open->used, end - open->offset);
      const std::uint64_t length = align_up(used, caps.size_multiple);
      if (length <= caps.max_alloc) {
        open->used = used;
        open->length = length;
        open->tensors.push_back(index);
        tp->region = plan.regions.size() - 1;
        tp->region_offset = piece.offset - open->offset;
        continue;
      }
    }
    ImportRegion region;
    region.file = piece.file;
    region.offset = align_down(piece.offset, caps.import_alignment);
    region.used = end - region.offset;
    region.length = align_up(region.used, caps.size_multiple);
    region.tensors.push_back(index);
    plan.regions.push_back(std::move(region));
    open = &plan.regions.back();
    tp->region = plan.regions.size() - 1;
    tp->region_offset = piece.offset - open->offset;
  }
  // The pages each region maps: mmap maps whole pages, from the page at or below its offset.
  const std::uint64_t page = page_size();
  for (ImportRegion& region : plan.regions) {
    region.map_offset = align_down(region.offset, page);
    region.map_length = align_up(region.offset + region.used, page) - region.map_offset;
  }
}

// An import rounded up to a size multiple larger than a page can reach past the pages mapped for
// its bytes (past the end of the file, which faults): such a region is declined here.
std::vector<DeclinedRegion> beyond_mapped_pages(const Plan& plan) {
  std::vector<DeclinedRegion> over;
  for (std::size_t r = 0; r < plan.regions.size(); ++r) {
    const ImportRegion& region = plan.regions[r];
    const std::uint64_t mapped = region.map_offset + region.map_length - region.offset;
    if (region.length > mapped)
      over.push_back({r, str("import size ", region.length, " exceeds the ", mapped, " mapped bytes")});
  }
  return over;
}

// "; largest: 'a' (N bytes), ..." — the three biggest tensors that need device allocations, so a
// refusal says what to leave out (or load zero_copy).
std::string largest_allocated(const Manifest& manifest, const Plan& plan) {
  std::vector<std::uint64_t> biggest;  // manifest indices, largest first
  for (std::size_t i = 0; i < plan.tensors.size(); ++i) {
    if (plan.tensors[i].placement != Placement::direct && plan.tensors[i].placement != Placement::staged) continue;
    biggest.push_back(i);
    std::sort(biggest.begin(), biggest.end(),
              [&](std::uint64_t a, std::uint64_t b) { return manifest.tensors[a].bytes > manifest.tensors[b].bytes; });
    if (biggest.size() > 3) biggest.pop_back();
  }
  std::string out;
  for (std::uint64_t i : biggest)
    out += (out.empty() ? "; largest: '" : ", '") + manifest.tensors[i].name + "' (" +
           std::to_string(manifest.tensors[i].bytes) + " bytes)";
  return out;
}

void check_fits(const Manifest& manifest, const DeviceInfo& device, const Plan& plan) {
  const DeviceCaps& caps = device.caps;
  for (std::size_t i = 0; i < plan.tensors.size(); ++i) {
    if (plan.tensors[i].placement != Placement::direct && plan.tensors[i].placement != Placement::staged) continue;
    const TensorInfo& t = manifest.tensors[i];
    if (t.bytes > caps.max_alloc)
      fail(ErrorCode::does_not_fit, "tensor '", t.name, "' needs one allocation of ", t.bytes, " bytes but device ",
           device.id(), " allows at most ", caps.max_alloc, " bytes per allocation; nothing was allocated");
  }
  // On unified memory (the host, iGPUs) the staging ring and decode scratch come out of the same
  // memory as the device's allocations.
  const bool unified = device.memory == MemoryModel::unified;
  const std::uint64_t needed =
      checked_add(plan.device_bytes, unified ? checked_add(plan.staging_budget, plan.decode_bytes, "device memory") : 0,
                  "device memory");
  // What is free now when the driver says, else what the device has.
  const bool free_known =
      caps.memory_available != 0 && (caps.device_memory == 0 || caps.memory_available < caps.device_memory);
  const std::uint64_t has = free_known ? caps.memory_available : caps.device_memory;
  if (has != 0 && needed > has)
    fail(ErrorCode::does_not_fit, "the model needs ", needed, " bytes of device memory (",
         plan.count(Placement::direct), " direct + ", plan.count(Placement::staged), " staged tensors",
         unified ? ", staging and decode scratch" : "", ") but device ", device.id(), " has ", has, " bytes",
         free_known ? str(" free", caps.device_memory ? str(" (of ", caps.device_memory, ")") : std::string())
                    : std::string(),
         largest_allocated(manifest, plan), "; nothing was allocated");
}

// Every figure of the plan that follows from its placements: byte totals, the staging ring,
// decode scratch and the predicted peak. Called by make_plan and again by every re-plan.
void compute_totals(const Manifest& manifest, const DeviceInfo& device, Plan& plan) {
  plan.model_bytes = plan.largest_tensor = plan.mapped_bytes = plan.device_bytes = plan.decode_bytes = 0;
  std::uint64_t staged_bytes = 0;
  for (std::size_t i = 0; i < plan.tensors.size(); ++i) {
    const TensorPlan& tp = plan.tensors[i];
    const TensorInfo& t = manifest.tensors[i];
    if (tp.placement == Placement::skipped) continue;
    plan.model_bytes = checked_add(plan.model_bytes, t.bytes, "model bytes");
    plan.largest_tensor = std::max(plan.largest_tensor, t.bytes);
    if (tp.placement == Placement::direct || tp.placement == Placement::staged)
      plan.device_bytes = checked_add(plan.device_bytes, t.bytes, "device memory");
    if (tp.placement == Placement::staged) staged_bytes = checked_add(staged_bytes, t.bytes, "staged bytes");
    if (t.encoding != Encoding::raw) {
      // What the pipeline holds while it decodes (check_decode_fits): encoded bytes in host
      // scratch; staged tensors are decoded into host scratch too, direct ones straight into
      // their host-visible buffer (counted with the device's allocations).
      const std::uint64_t scratch = checked_add(encoded_length(t), tp.placement == Placement::staged ? t.bytes : 0,
                                                str("tensor '", t.name, "' decode scratch"));
      plan.decode_bytes = std::max(plan.decode_bytes, scratch);
    }
  }
  for (const ImportRegion& region : plan.regions)
    plan.mapped_bytes = checked_add(plan.mapped_bytes, region.length, "mapped bytes");
  const StagingShape ring = staging_shape(staged_bytes, plan.options.staging_budget, plan.options.staging_slots);
  plan.staging_budget = ring.budget;
  plan.staging_slots = ring.slots;
  plan.slot_bytes = ring.slot_bytes;

  check_fits(manifest, device, plan);

  // Unified memory: the device's allocations are the process's memory too.
  const std::uint64_t in_process = device.memory == MemoryModel::unified ? plan.device_bytes : 0;
  plan.predicted_host_peak =
      checked_add(checked_add(plan.mapped_bytes, in_process, "predicted host peak"),
                  checked_add(plan.staging_budget, plan.decode_bytes, "predicted host peak"), "predicted host peak");
}

// Where a tensor goes when its region is declined.
Placement declined_fallback(const DeviceInfo& device) {
  return device.caps.host_visible_alloc ? Placement::direct : Placement::staged;
}

// The declined regions' tensors leave zero_copy (direct where the device allows it, else staged),
// with the reason; the regions keep their numbers, marked declined. `when`: "" at plan time (the
// reason replaces "mapped in place"), else a prefix added to the reason ("at load: ").
void decline(Plan& plan, const DeviceInfo& device, const std::vector<DeclinedRegion>& declined, std::string_view when) {
  const Placement to = declined_fallback(device);
  for (const DeclinedRegion& d : declined) {
    if (d.region >= plan.regions.size() || !plan.regions[d.region].imported())
      fail(ErrorCode::usage, "re-plan of region ", d.region, " of ", plan.regions.size(), ": not an imported region");
    ImportRegion& region = plan.regions[d.region];
    for (std::size_t index : region.tensors) {
      TensorPlan& tp = plan.tensors[index];
      tp.placement = to;
      tp.reason = when.empty() ? str(d.why, arrow(to)) : str(tp.reason, "; ", when, d.why, arrow(to));
      tp.region = no_region;
      tp.region_offset = 0;
    }
    region.declined = when.empty() ? d.why : str(when, d.why);
    region.tensors = {};
    region.length = region.cached = 0;
  }
}

// A device imports at most caps.import_limit bytes of host memory in all (an iGPU's share of
// system memory). Drivers do not all fail cleanly past it (a lost device), so the regions past it,
// in file order, are declined here, before any driver is asked; their tensors then need device
// memory, which check_fits holds to what the device has.
void limit_imports(Plan& plan, const DeviceInfo& device) {
  const std::uint64_t limit = device.caps.import_limit;
  if (limit == 0) return;
  std::vector<DeclinedRegion> over;
  std::uint64_t imported = 0;
  for (std::size_t r = 0; r < plan.regions.size(); ++r) {
    const std::uint64_t length = plan.regions[r].length;
    if (!plan.regions[r].imported()) continue;
    if (length <= limit - imported) {
      imported += length;
      continue;
    }
    over.push_back({r, str("device ", device.id(), " imports at most ", limit, " bytes of host memory (", imported,
                           " taken by earlier regions, this one ", length, ")")});
  }
  if (!over.empty()) decline(plan, device, over, "");
}

// Byte counts in verdicts and refusals: exact, with a readable size beside them.
std::string size_text(std::uint64_t bytes) {
  const double gib = static_cast<double>(bytes) / (1ull << 30);
  char text[48];
  if (gib >= 1024) std::snprintf(text, sizeof text, "%.2f TiB", gib / 1024);
  else if (gib >= 1) std::snprintf(text, sizeof text, "%.2f GiB", gib);
  else std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return str(bytes, " bytes (", text, ")");
}

// The model file a tensor's bytes come from, for messages (a manifest built by hand may name none).
std::string file_of(const Manifest& manifest, const TensorInfo& t) {
  const std::uint32_t file = t.pieces.empty() ? 0 : t.pieces.front().file;
  return file < manifest.files.size() ? manifest.files[file].string() : std::string("(no file)");
}

// Whether a load decodes this tensor on the host: encoded, and not one the planner skips (STRING,
// empty) whatever is selected.
bool decoded_on_host(const TensorInfo& t) {
  return t.encoding != Encoding::raw && t.dtype != DType::STRING && t.bytes != 0;
}

// The most bytes an encoding can decode `encoded` bytes into, by its own structure, where every
// element takes at least one encoded byte: ONNX typed fields (a varint, or a tag and a fixed value,
// per element) and strided spans (each element once in the span). A tensor claiming more is
// malformed and refused before anything is allocated for it. nullopt for a sparse tensor: its
// sparsity (checked at open) may rightly place a few stored values in a dense tensor of any size,
// which the machine's memory alone bounds.
std::optional<std::uint64_t> most_decoded(const TensorInfo& t, std::uint64_t encoded) {
  switch (t.encoding) {
    case Encoding::onnx_varint:
    case Encoding::onnx_fixed: {
      const auto layout = dtype_layout(t.dtype);
      const std::uint64_t width = layout && layout->block_elems == 1 ? layout->block_bytes : 16;
      return encoded > UINT64_MAX / width ? UINT64_MAX : encoded * width;
    }
    case Encoding::strided: return encoded;
    case Encoding::raw:
    case Encoding::sparse: break;
  }
  return std::nullopt;
}

// check_decodes_fit for one tensor (lwload/plan.hpp): its encoded bytes in host scratch and its
// decoded bytes (host scratch, or the host-visible buffer it is decoded into) at once, against
// the address space RLIMIT_AS leaves and then the host memory available — the order fit_machine
// checks the whole load in. Measured against the machine, not against the encoded size: a sparse
// tensor may rightly be thousands of times its stored values.
void check_decode_fits(const Manifest& manifest, const TensorInfo& t, const MachineMemory& m) {
  const std::uint64_t encoded = encoded_length(t);
  if (const auto most = most_decoded(t, encoded); most && t.bytes > *most)
    fail(ErrorCode::bad_input, file_of(manifest, t), ": tensor '", t.name, "': its ", t.bytes,
         " bytes cannot come from ", encoded, " encoded bytes (", encoding_name(t.encoding),
         ": at least one encoded byte per element)");
  // The one hard bound: a hand-built manifest may give sizes whose sum passes 2^64 (refused, not wrapped).
  const std::uint64_t needed = checked_add(encoded, t.bytes, str("tensor '", t.name, "' decode"));
  const auto refuse = [&](const std::string& but) {
    const bool sparse = t.encoding == Encoding::sparse;
    fail(ErrorCode::does_not_fit, file_of(manifest, t), ": ", sparse ? "densifying" : "decoding", " tensor '", t.name,
         "'", sparse ? std::string() : str(" (", encoding_name(t.encoding), " encoding)"), " needs ", size_text(needed),
         " at once (", encoded, sparse ? " bytes stored + " : " bytes encoded + ", t.bytes,
         sparse ? " bytes dense" : " bytes decoded", ") but ", but, "; nothing was read");
  };
  const std::uint64_t address_left = m.address_space_left();
  if (m.address_space_limit != 0 && needed > address_left)
    refuse(str("RLIMIT_AS (", m.address_space_limit, " bytes) leaves ", size_text(address_left),
               " of address space to this process"));
  const std::uint64_t available = m.host_available();
  if (available != 0 && needed > available)
    refuse(str("the machine has ", size_text(available), " of host memory available (", m.host_bound_by(), ")"));
}

// Plan::host's figures from the placements (docs/ARCHITECTURE.md "Over-memory loads"): what the load will hold
// of the host's memory, by kind. The mapped bytes are whole pages (map_length).
void host_figures(const DeviceInfo& device, Plan& plan, const Manifest& manifest) {
  HostMemory& h = plan.host;
  const DeviceCaps& caps = device.caps;
  const bool unified = device.memory == MemoryModel::unified;
  const bool cpu = device.kind == DeviceKind::cpu;  // its allocations are this process's anonymous memory
  const bool pins = caps.import_pins != Pinning::no;
  std::uint64_t mapped = 0, direct = 0, staged = 0;
  for (const ImportRegion& region : plan.regions)
    if (region.imported()) mapped = checked_add(mapped, region.map_length, "mapped pages");
  for (std::size_t i = 0; i < plan.tensors.size(); ++i) {
    if (plan.tensors[i].placement == Placement::direct)
      direct = checked_add(direct, manifest.tensors[i].bytes, "direct bytes");
    if (plan.tensors[i].placement == Placement::staged)
      staged = checked_add(staged, manifest.tensors[i].bytes, "staged bytes");
  }
  const std::uint64_t staging = plan.staging_budget;
  h.pinned_imports = pins ? mapped : 0;
  h.evictable = pins ? 0 : mapped;
  h.device_allocations = unified && !cpu ? plan.device_bytes : 0;
  h.anonymous = checked_add(
      plan.decode_bytes, checked_add(cpu ? plan.device_bytes : 0, caps.pinned_staging ? 0 : staging, "anonymous bytes"),
      "anonymous bytes");
  h.pinned = checked_add(checked_add(h.pinned_imports, h.device_allocations, "pinned bytes"),
                         caps.pinned_staging ? staging : 0, "pinned bytes");
  // A unified GPU's allocations are held to the budget its driver reports (checked with the
  // device); only a device that reports none has them held to host memory here.
  const bool own_budget = caps.memory_available != 0 || caps.device_memory != 0;
  std::uint64_t resident =
      checked_add(h.pinned - (own_budget ? h.device_allocations : 0), h.anonymous, "resident bytes");
  if (!h.lazy) resident = checked_add(resident, h.evictable, "resident bytes");
  h.resident = resident;
  h.resident_at_ready = !(h.lazy && h.evictable > 0);
  // Mapped into this process: the file pages, host-visible allocations (direct on unified memory),
  // a CPU device's allocations, staging and scratch.
  std::uint64_t address = checked_add(mapped, unified || cpu ? direct : 0, "address space");
  address = checked_add(address, cpu ? staged : 0, "address space");
  h.address_space = checked_add(address, checked_add(staging, plan.decode_bytes, "address space"), "address space");
}

// The tensor whose decode takes Plan::decode_bytes, for the whole load's refusals (the decode
// rule has passed it alone; with the rest it may not fit): "" when nothing is decoded.
std::string decode_text(const Manifest& manifest, const Plan& plan) {
  if (plan.decode_bytes == 0) return {};
  for (std::size_t i = 0; i < plan.tensors.size(); ++i) {
    const TensorInfo& t = manifest.tensors[i];
    const Placement p = plan.tensors[i].placement;
    if (p == Placement::skipped || t.encoding == Encoding::raw) continue;
    if (saturating_add(encoded_length(t), p == Placement::staged ? t.bytes : 0) == plan.decode_bytes)
      return str("; of it, ", t.encoding == Encoding::sparse ? "densifying" : "decoding", " tensor '", t.name, "' (",
                 file_of(manifest, t), ") holds ", plan.decode_bytes, " bytes of scratch");
  }
  return {};
}

// Declines imported regions, in file order, from the first one whose map_length would take the
// running total past `budget`; `why(taken, length)` says why for each.
template <typename Why>
bool decline_past(Plan& plan, const DeviceInfo& device, std::uint64_t budget, const Why& why) {
  std::vector<DeclinedRegion> over;
  std::uint64_t taken = 0;
  for (std::size_t r = 0; r < plan.regions.size(); ++r) {
    const ImportRegion& region = plan.regions[r];
    if (!region.imported()) continue;
    if (over.empty() && region.map_length <= budget - taken) {
      taken += region.map_length;
      continue;
    }
    over.push_back({r, why(taken, region.map_length)});
  }
  if (!over.empty()) decline(plan, device, over, "");
  return !over.empty();
}

// docs/ARCHITECTURE.md "Over-memory loads", before anything is read: the address space RLIMIT_AS leaves, then
// imports that pin (they fall back to direct or staged past what host memory holds), then what
// must be resident at once against what the machine has. `may_decline`: false on a re-plan at
// load time (imports already made stay; the figures are checked as they are).
void fit_machine(const Manifest& manifest, const DeviceInfo& device, Plan& plan, bool may_decline) {
  HostMemory& h = plan.host;
  const MachineMemory& m = h.machine;
  host_figures(device, plan, manifest);

  const std::uint64_t address_left = m.address_space_left();
  if (m.address_space_limit != 0 && h.address_space > address_left) {
    const std::uint64_t others = h.address_space - (h.pinned_imports + h.evictable);
    const std::uint64_t budget = others < address_left ? address_left - others : 0;
    // Only staging into a device's own memory moves bytes out of the address space: direct buffers
    // on unified memory and a CPU device's allocations are mapped here too.
    const bool fallback_helps = declined_fallback(device) == Placement::staged && device.kind != DeviceKind::cpu;
    if (may_decline && fallback_helps &&
        decline_past(plan, device, budget, [&](std::uint64_t taken, std::uint64_t length) {
          return str("mapping ", length, " more bytes (", taken,
                     " mapped before it) would pass the address space RLIMIT_AS leaves (", address_left, " of ",
                     m.address_space_limit, " bytes)");
        })) {
      compute_totals(manifest, device, plan);
      host_figures(device, plan, manifest);
    }
    if (h.address_space > address_left)
      fail(ErrorCode::does_not_fit, "the load needs ", size_text(h.address_space),
           " of address space (mapped file pages, host-visible allocations, staging, scratch) but RLIMIT_AS (",
           m.address_space_limit, " bytes) leaves ", size_text(address_left), " to this process",
           decode_text(manifest, plan), "; nothing was read");
  }

  const std::uint64_t available = m.host_available();
  const std::string bound_by = m.host_bound_by();
  if (available != 0 && may_decline && h.pinned_imports > 0 && h.resident > available) {
    const std::uint64_t others = h.resident - h.pinned_imports;
    const std::uint64_t budget = others < available ? available - others : 0;
    const bool known = device.caps.import_pins == Pinning::yes;
    if (decline_past(plan, device, budget, [&](std::uint64_t taken, std::uint64_t length) {
          return str(known ? "imports pin memory" : "imports may pin memory (the driver does not say)", ": ", length,
                     " more bytes pinned (", taken, " before it, ", others, " held otherwise) would pass the ",
                     available, " bytes of host memory available (", bound_by, ")");
        })) {
      compute_totals(manifest, device, plan);
      host_figures(device, plan, manifest);
    }
  }
  if (available != 0 && h.resident > available) {
    const bool lazy_helps = !h.lazy && h.evictable > 0 && h.resident - h.evictable <= available;
    fail(ErrorCode::does_not_fit, "the load needs ", size_text(h.resident), " of host memory resident at once (",
         h.lazy ? "" : str("file pages ", h.evictable, " + "), "pinned ",
         h.resident - h.anonymous - (h.lazy ? 0 : h.evictable), " + anonymous ", h.anonymous, ") but the machine has ",
         size_text(available), " available (", bound_by, ")", decode_text(manifest, plan),
         lazy_helps ? "; --lazy maps the file without making it resident and lets the kernel page it in on use" : "",
         "; nothing was read");
  }

  if (available == 0)
    h.verdict = "unknown: the machine's available memory could not be read; nothing checked against it";
  else if (!h.resident_at_ready)
    h.verdict =
        str("lazy: ", size_text(h.evictable),
            " of mapped file pages are not made resident (the kernel pages them in on use and may evict them); ",
            size_text(h.resident), " resident at once of ", size_text(available), " available (", bound_by, ")");
  else
    h.verdict = str("fits: ", size_text(h.resident), " resident at once of ", size_text(available), " available (",
                    bound_by, ")");
  if (m.address_space_limit != 0)
    h.verdict += str("; address space ", h.address_space, " of ", address_left, " bytes RLIMIT_AS leaves");
}

// What is in the page cache, per file (the span the plan reads) and per region: measured once,
// through the files the manifest kept open, at a cost that does not grow with the file. One
// cachestat per range where the kernel has it (exact; it skips holes and uncached stretches, so a
// sparse 4 TiB file costs microseconds); before Linux 6.5 a bounded sample of pages per range by
// mincore (io::count_cached: FileResidency::exact false, with the samples), so a warm load on an
// edge kernel pays microseconds, not a walk of every page. A manifest built by hand (no open
// files) is unknown.
void measure_residency(const Manifest& manifest, Plan& plan) {
  plan.residency.assign(manifest.files.size(), FileResidency{});
  if (manifest.opened.size() != manifest.files.size()) return;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> spans(manifest.files.size(), {UINT64_MAX, 0});
  for (std::size_t i = 0; i < plan.tensors.size(); ++i) {
    if (plan.tensors[i].placement == Placement::skipped) continue;
    for (const Piece& piece : manifest.tensors[i].pieces) {
      auto& [first, end] = spans.at(piece.file);
      first = std::min(first, piece.offset);
      end = std::max(end, saturating_add(piece.offset, piece.length));
    }
  }
  for (std::size_t f = 0; f < spans.size(); ++f) {
    const auto& file = manifest.opened[f].file;
    const auto [first, end] = spans[f];
    if (!file || first >= end || file->native_handle() < 0) continue;
    const io::CachedCount count = io::count_cached(*file, first, end - first);
    plan.residency[f] = {true, end - first, count.bytes, count.exact(), count.samples};
  }
  // A file all cached (or none of it) needs no count per region: a warm load pays one call per file.
  for (ImportRegion& region : plan.regions) {
    if (!region.imported()) continue;
    const FileResidency& r = plan.residency[region.file];
    const auto& file = manifest.opened[region.file].file;
    if (!r.known || r.cached == r.span) region.cached = region.length;
    else if (r.cached == 0) region.cached = 0;
    else region.cached = io::count_cached(*file, region.offset, region.length).bytes;
  }
}

}  // namespace

StagingShape staging_shape(std::uint64_t staged_bytes, std::uint64_t budget, std::uint32_t slots) {
  if (staged_bytes == 0) return {};
  if (slots == 0) fail(ErrorCode::usage, "staging slots must be at least 1");
  const std::uint64_t per_slot = align_down(budget / slots, kSlotAlignment);
  if (per_slot < kSlotAlignment)
    fail(ErrorCode::does_not_fit, "staging budget of ", budget, " bytes is too small for ", slots,
         " slots: each slot needs at least ", kSlotAlignment, " bytes (budget ≥ ",
         std::uint64_t{slots} * kSlotAlignment, "); nothing was allocated");
  // A model smaller than the budget needs no more staging than its own size.
  const std::uint64_t needed = align_up((staged_bytes + slots - 1) / slots, kSlotAlignment);
  StagingShape shape;
  shape.slots = slots;
  shape.slot_bytes = std::min(per_slot, std::max(needed, kSlotAlignment));
  shape.budget = shape.slot_bytes * slots;
  return shape;
}

Plan make_plan(const Manifest& manifest, const DeviceInfo& device, const PlanOptions& options) {
  const DeviceCaps& caps = device.caps;
  const Capabilities can{device.memory == MemoryModel::unified && caps.import_host_ptr, caps.host_visible_alloc};
  if (options.force == Placement::skipped) fail(ErrorCode::usage, "placement 'skipped' cannot be forced");
  if (options.force == Placement::zero_copy && !can.zero_copy)
    fail(ErrorCode::usage, "device ", device.id(), " cannot do zero-copy: it needs unified memory (this one is ",
         memory_model_name(device.memory), ") and host-pointer import (", caps.import_host_ptr ? "yes" : "no", ")");
  if (options.force == Placement::direct && !can.direct)
    fail(ErrorCode::usage, "device ", device.id(), " cannot do direct placement: it has no host-visible allocations");
  if (options.staging_slots == 0) fail(ErrorCode::usage, "staging slots must be at least 1");

  Plan plan;
  plan.device = device.id();
  plan.memory = device.memory;
  plan.options = options;
  const bool prefer_zero_copy = can.zero_copy && (!options.force || options.force == Placement::zero_copy);

  const std::vector<bool> selected = select(manifest, options);
  plan.tensors.reserve(manifest.tensors.size());  // no doubling copies: a header may list millions
  for (std::size_t index = 0; index < manifest.tensors.size(); ++index) {
    const TensorInfo& t = manifest.tensors[index];
    TensorPlan tp;
    if (!selected[index]) {
      tp.selected = false;
      tp.placement = Placement::skipped;
      tp.reason = "not selected";  // (--only); inline in std::string, like "mapped in place"
    } else if (t.dtype == DType::STRING) {
      tp.placement = Placement::skipped;
      tp.reason = "STRING tensors hold variable-length strings, not device data";
    } else if (t.bytes == 0) {
      tp.placement = Placement::skipped;
      tp.reason = "empty tensor (0 bytes)";
    } else if (prefer_zero_copy) {
      const std::string obstacle = zero_copy_obstacle(t, caps);
      if (obstacle.empty()) {
        tp.placement = Placement::zero_copy;
        // Short enough for std::string's inline buffer: a header may list millions of tensors.
        tp.reason = "mapped in place";
      } else {
        tp.placement = fallback(device, can, options);
        tp.reason = obstacle + arrow(tp.placement);
      }
    } else if (options.force) {
      tp.placement = *options.force;
      tp.reason = str("forced", arrow(tp.placement));
    } else {
      tp.placement = fallback(device, can, options);
      if (device.memory == MemoryModel::discrete) tp.reason = str("discrete memory", arrow(tp.placement));
      else if (tp.placement == Placement::direct)
        tp.reason = str("device cannot import host memory", arrow(tp.placement));
      else tp.reason = str("device has neither host import nor host-visible memory", arrow(tp.placement));
    }
    if (caps.max_shader_binding != 0 && t.bytes > caps.max_shader_binding && tp.placement != Placement::skipped)
      tp.reason += str("; warning: ", t.bytes, " bytes exceed the device's largest shader binding (",
                       caps.max_shader_binding, "): a shader cannot bind it whole");
    plan.tensors.push_back(std::move(tp));
  }

  plan.host.machine = options.machine ? *options.machine : machine_memory();
  plan.host.lazy = options.lazy;
  // The decode rule first: it depends on the selection alone, and its refusal names the tensor
  // (the device's and the whole load's checks would only count it among the rest).
  for (std::size_t i = 0; i < plan.tensors.size(); ++i)
    if (plan.tensors[i].placement != Placement::skipped && decoded_on_host(manifest.tensors[i]))
      check_decode_fits(manifest, manifest.tensors[i], plan.host.machine);

  group_regions(manifest, caps, plan);
  decline(plan, device, beyond_mapped_pages(plan), "");
  limit_imports(plan, device);
  compute_totals(manifest, device, plan);
  fit_machine(manifest, device, plan, true);
  measure_residency(manifest, plan);
  plan::schedule(manifest, plan);
  return plan;
}

void check_decodes_fit(const Manifest& manifest, const MachineMemory& machine) {
  for (const TensorInfo& t : manifest.tensors)
    if (decoded_on_host(t)) check_decode_fits(manifest, t, machine);
}

void replan_declined(Plan& plan, const Manifest& manifest, const DeviceInfo& device,
                     const std::vector<DeclinedRegion>& declined) {
  decline(plan, device, declined, "at load: ");
  compute_totals(manifest, device, plan);
  fit_machine(manifest, device, plan, false);
  plan::schedule(manifest, plan);  // declined tensors are read now: their reads join the schedule
}

namespace plan {
namespace {

// "region 3 (file 'a.safetensors', first tensor 'w')": where a refusal of a handed-in plan points.
std::string region_text(const Manifest& manifest, const Plan& plan, std::size_t r) {
  const ImportRegion& region = plan.regions[r];
  std::string text =
      str("region ", r, " (file ",
          region.file < manifest.files.size() ? str("'", manifest.files[region.file].string(), "'") : str(region.file));
  if (!region.tensors.empty() && region.tensors.front() < manifest.tensors.size())
    text += str(", first tensor '", manifest.tensors[region.tensors.front()].name, "'");
  return text + ")";
}

// A stored figure against the one derived: refused, naming it, when they differ.
void same(std::uint64_t stored, std::uint64_t derived, std::string_view where, std::string_view field) {
  if (stored != derived)
    fail(ErrorCode::usage, "the plan's ", where, field, " is ", stored,
         " but the manifest, the device and the plan's choices give ", derived, "; make the plan again");
}

// The placements: each one the device can do for its tensor.
void check_placements(const Manifest& manifest, const DeviceInfo& device, const Plan& plan) {
  const DeviceCaps& caps = device.caps;
  const bool can_zero_copy = device.memory == MemoryModel::unified && caps.import_host_ptr;
  for (std::size_t i = 0; i < plan.tensors.size(); ++i) {
    const TensorPlan& tp = plan.tensors[i];
    const TensorInfo& t = manifest.tensors[i];
    const auto refuse = [&](const auto&... why) {
      fail(ErrorCode::usage, "the plan places tensor '", t.name, "' ", placement_name(tp.placement), " but ", why...);
    };
    if (tp.placement == Placement::skipped) continue;
    if (t.dtype == DType::STRING || t.bytes == 0)
      refuse(t.dtype == DType::STRING ? "it is a STRING tensor" : "it is empty");
    if (tp.placement == Placement::zero_copy) {
      if (!can_zero_copy) refuse("device ", device.id(), " cannot import host memory");
      if (const std::string obstacle = zero_copy_obstacle(t, caps); !obstacle.empty()) refuse(obstacle);
      if (tp.region >= plan.regions.size()) refuse("names region ", tp.region, " of ", plan.regions.size());
    } else {
      if (tp.placement == Placement::direct && !caps.host_visible_alloc)
        refuse("device ", device.id(), " has no host-visible allocations");
      same(tp.region, no_region, str("tensor '", t.name, "' "), "region");
      same(tp.region_offset, 0, str("tensor '", t.name, "' "), "region_offset");
    }
  }
}

// The regions: each imported one's tensors, and the geometry that follows from them (group_regions).
void check_regions(const Manifest& manifest, const DeviceInfo& device, const Plan& plan) {
  const DeviceCaps& caps = device.caps;
  const std::uint64_t page = page_size();
  std::vector<std::size_t> listed(plan.tensors.size(), no_region);  // one pass: plans may hold millions
  for (std::size_t r = 0; r < plan.regions.size(); ++r) {
    const ImportRegion& region = plan.regions[r];
    const std::string where = region_text(manifest, plan, r) + " ";
    if (region.file >= manifest.files.size())
      fail(ErrorCode::usage, "the plan's ", where, "names file ", region.file, " of ", manifest.files.size());
    if (!region.imported()) {
      // Declined: it holds no tensors (so no zero_copy tensor can name it) and imports nothing.
      if (!region.tensors.empty())
        fail(ErrorCode::usage, "the plan's ", where, "is declined (", region.declined, ") but still holds ",
             region.tensors.size(), " tensors");
      same(region.length, 0, where, "length");
      continue;
    }
    if (region.tensors.empty()) fail(ErrorCode::usage, "the plan's ", where, "is imported but holds no tensors");
    std::uint64_t first = UINT64_MAX, end = 0;
    for (std::size_t index : region.tensors) {
      if (index >= manifest.tensors.size() || listed[index] != no_region)
        fail(ErrorCode::usage, "the plan's ", where, "names tensor ", index, " of ", manifest.tensors.size(),
             " (or one another region names)");
      listed[index] = r;
      const TensorInfo& t = manifest.tensors[index];
      const TensorPlan& tp = plan.tensors[index];
      if (tp.placement != Placement::zero_copy || tp.region != r)
        fail(ErrorCode::usage, "the plan's ", where, "holds tensor '", t.name, "', which the plan places ",
             placement_name(tp.placement),
             tp.placement == Placement::zero_copy ? str(" in region ", tp.region) : std::string());
      if (t.pieces.size() != 1 || t.pieces[0].file != region.file)
        fail(ErrorCode::usage, "the plan's ", where, "holds tensor '", t.name, "', whose bytes are not in its file");
      first = std::min(first, t.pieces[0].offset);
      end = std::max(end, t.pieces[0].offset + t.pieces[0].length);  // the reader checked it fits 64 bits
    }
    const std::uint64_t offset = align_down(first, caps.import_alignment);
    const std::uint64_t used = end - offset;
    const std::uint64_t length = align_up(used, caps.size_multiple);
    const std::uint64_t map_offset = align_down(offset, page);
    same(region.offset, offset, where, "offset");
    same(region.used, used, where, "used");
    same(region.length, length, where, "length");
    same(region.map_offset, map_offset, where, "map_offset");
    same(region.map_length, align_up(offset + used, page) - map_offset, where, "map_length");
    if (length > caps.max_alloc)
      fail(ErrorCode::does_not_fit, "the plan's ", where, "imports ", length, " bytes but device ", device.id(),
           " imports at most ", caps.max_alloc, " bytes at once");
    if (length > region.map_offset + region.map_length - offset)
      fail(ErrorCode::usage, "the plan's ", where, "imports ", length, " bytes, past the ",
           region.map_offset + region.map_length - offset, " bytes its pages map");
    for (std::size_t index : region.tensors)
      same(plan.tensors[index].region_offset, manifest.tensors[index].pieces[0].offset - offset,
           str("tensor '", manifest.tensors[index].name, "' "), "region_offset");
  }
  for (std::size_t i = 0; i < plan.tensors.size(); ++i)
    if (plan.tensors[i].placement == Placement::zero_copy && listed[i] != plan.tensors[i].region)
      fail(ErrorCode::usage, "the plan places tensor '", manifest.tensors[i].name, "' zero_copy in region ",
           plan.tensors[i].region, ", which does not hold it");
}

}  // namespace

void check_handed_in(const Manifest& manifest, const DeviceInfo& device, Plan& plan, const MachineMemory& machine) {
  if (plan.device != device.id())
    fail(ErrorCode::usage, "the plan was made for device ", plan.device, ", not ", device.id());
  if (plan.memory != device.memory)
    fail(ErrorCode::usage, "the plan was made for ", memory_model_name(plan.memory), " memory; device ", device.id(),
         " has ", memory_model_name(device.memory));
  if (plan.tensors.size() != manifest.tensors.size())
    fail(ErrorCode::usage, "the plan does not match the manifest (", plan.tensors.size(), " tensors planned, ",
         manifest.tensors.size(), " in the manifest)");
  if (plan.residency.size() != manifest.files.size())
    fail(ErrorCode::usage, "the plan measured the page cache of ", plan.residency.size(), " files; the manifest has ",
         manifest.files.size());
  check_placements(manifest, device, plan);
  check_regions(manifest, device, plan);

  // The totals and the staging ring, from the placements and the options (which also checks the
  // device's memory and largest allocation, as make_plan did).
  const Plan stored_totals = [&] {
    Plan p;
    p.model_bytes = plan.model_bytes, p.largest_tensor = plan.largest_tensor, p.mapped_bytes = plan.mapped_bytes;
    p.device_bytes = plan.device_bytes, p.staging_budget = plan.staging_budget, p.staging_slots = plan.staging_slots;
    p.slot_bytes = plan.slot_bytes, p.decode_bytes = plan.decode_bytes,
    p.predicted_host_peak = plan.predicted_host_peak;
    p.host = plan.host;
    return p;
  }();
  compute_totals(manifest, device, plan);
  same(stored_totals.staging_budget, plan.staging_budget, "staging ", "budget (staging_budget)");
  same(stored_totals.staging_slots, plan.staging_slots, "staging ", "slots (staging_slots)");
  same(stored_totals.slot_bytes, plan.slot_bytes, "staging ", "slot_bytes");
  same(stored_totals.model_bytes, plan.model_bytes, "", "model_bytes");
  same(stored_totals.largest_tensor, plan.largest_tensor, "", "largest_tensor");
  same(stored_totals.mapped_bytes, plan.mapped_bytes, "", "mapped_bytes");
  same(stored_totals.device_bytes, plan.device_bytes, "", "device_bytes");
  same(stored_totals.decode_bytes, plan.decode_bytes, "", "decode_bytes");
  same(stored_totals.predicted_host_peak, plan.predicted_host_peak, "", "predicted_host_peak");

  // The host memory the load holds, by kind, then the machine as it is now: a plan made when there
  // was room may no longer fit. Nothing is declined here: its choices are the plan's.
  for (std::size_t i = 0; i < plan.tensors.size(); ++i)
    if (plan.tensors[i].placement != Placement::skipped && decoded_on_host(manifest.tensors[i]))
      check_decode_fits(manifest, manifest.tensors[i], machine);
  plan.host.lazy = plan.options.lazy;
  host_figures(device, plan, manifest);
  const HostMemory& was = stored_totals.host;
  same(was.pinned, plan.host.pinned, "host memory ", "pinned");
  same(was.pinned_imports, plan.host.pinned_imports, "host memory ", "pinned_imports");
  same(was.device_allocations, plan.host.device_allocations, "host memory ", "device_allocations");
  same(was.evictable, plan.host.evictable, "host memory ", "evictable");
  same(was.anonymous, plan.host.anonymous, "host memory ", "anonymous");
  same(was.resident, plan.host.resident, "host memory ", "resident");
  same(was.address_space, plan.host.address_space, "host memory ", "address_space");
  plan.host.machine = machine;
  fit_machine(manifest, device, plan, false);
  schedule(manifest, plan);
}

}  // namespace plan

}  // namespace lwload
