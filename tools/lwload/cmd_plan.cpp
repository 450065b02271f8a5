// lwload plan: where each tensor of a model would go on a device, and why; the imported regions;
// the predicted host and device memory. Nothing is loaded.
#include <algorithm>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "cli.hpp"
#include "load_options.hpp"
#include "lwload/backend.hpp"
#include "lwload/error.hpp"
#include "lwload/plan.hpp"

namespace lwload::cli {
namespace {

std::string percent(std::uint64_t part, std::uint64_t whole) {
  // Divided first: a multi-TiB span would wrap part * 100.
  if (whole == 0) return "100%";
  return str(std::min<std::uint64_t>(100, whole >= 100 ? part / (whole / 100) : part * 100 / whole), "%");
}

void print_plan(const Plan& plan, const Manifest& manifest, const DeviceInfo& device) {
  std::size_t width = 4;
  std::size_t not_selected = 0;
  for (std::size_t i = 0; i < plan.tensors.size(); ++i)
    if (plan.tensors[i].selected) width = std::max(width, std::min<std::size_t>(manifest.tensors[i].name.size(), 40));
  std::cout << std::left << std::setw(static_cast<int>(width)) << "name"
            << "  " << std::right << std::setw(12) << "bytes"
            << "  " << std::left << std::setw(10) << "placement"
            << "reason\n";
  for (std::size_t i = 0; i < plan.tensors.size(); ++i) {
    const TensorPlan& tp = plan.tensors[i];
    const TensorInfo& t = manifest.tensors[i];
    if (!tp.selected) {
      ++not_selected;
      continue;
    }
    std::cout << std::left << std::setw(static_cast<int>(width)) << printable(t.name) << "  " << std::right
              << std::setw(12) << t.bytes << "  " << std::left << std::setw(10) << placement_name(tp.placement)
              << tp.reason;
    if (tp.region != no_region) std::cout << " [region " << tp.region << ", +" << tp.region_offset << "]";
    std::cout << '\n';
  }
  if (not_selected) std::cout << "(" << not_selected << " more tensors not selected)\n";
  if (!plan.regions.empty()) {
    std::cout << "\nimported regions (zero-copy):\n";
    for (std::size_t r = 0; r < plan.regions.size(); ++r) {
      const auto& region = plan.regions[r];
      if (!region.imported()) {
        std::cout << "  [" << r << "] file " << region.file << " offset " << region.offset << ": declined, "
                  << region.declined << '\n';
        continue;
      }
      std::cout << "  [" << r << "] file " << region.file << " offset " << region.offset << " length " << region.length
                << " (" << format_bytes(region.length) << "), " << region.tensors.size() << " tensor"
                << (region.tensors.size() == 1 ? "" : "s") << ", " << percent(region.cached, region.length)
                << " in the page cache\n";
    }
  }
  std::cout << "\ndevice:              " << device.id() << " (" << device.name << ", "
            << memory_model_name(device.memory) << " memory)\n";
  std::cout << "tensors:             " << plan.tensors.size() << " (zero_copy " << plan.count(Placement::zero_copy)
            << ", direct " << plan.count(Placement::direct) << ", staged " << plan.count(Placement::staged)
            << ", skipped " << plan.count(Placement::skipped)
            << (not_selected ? str(", of them ", not_selected, " not selected") : std::string()) << ")\n";
  std::cout << "model bytes:         " << plan.model_bytes << " (" << format_bytes(plan.model_bytes)
            << "), largest tensor " << format_bytes(plan.largest_tensor) << '\n';
  const std::size_t imported = plan.imported_regions();
  std::cout << "mapped (zero-copy):  " << format_bytes(plan.mapped_bytes) << " in " << imported << " region"
            << (imported == 1 ? "" : "s") << '\n';
  std::cout << "device memory:       " << format_bytes(plan.device_bytes) << '\n';
  for (std::size_t f = 0; f < plan.residency.size(); ++f) {
    const FileResidency& r = plan.residency[f];
    if (r.known)
      std::cout << "page cache:          " << printable(manifest.files[f].string()) << ": " << (r.exact ? "" : "~")
                << format_bytes(r.cached) << " of " << format_bytes(r.span) << " read (" << percent(r.cached, r.span)
                << (r.exact ? std::string(")")
                            : str(", estimated from ", r.samples, " sampled pages: the kernel has no cachestat)"))
                << '\n';
  }
  std::cout << "staged reads:        " << plan.direct_io_reason << '\n';
  std::cout << "read schedule:       " << plan.schedule.reads() << " reads in " << plan.schedule.queues.size()
            << " queues; " << plan.schedule.engine_reason << '\n';
  if (plan.staging_budget)
    std::cout << "staging:             " << format_bytes(plan.staging_budget) << " = " << plan.staging_slots
              << " slots x " << format_bytes(plan.slot_bytes) << '\n';
  if (plan.decode_bytes) std::cout << "decode scratch:      " << format_bytes(plan.decode_bytes) << '\n';
  std::cout << "predicted host peak: " << format_bytes(plan.predicted_host_peak) << " over the baseline\n";
  const HostMemory& h = plan.host;
  std::cout << "host memory:         pinned " << format_bytes(h.pinned) << " (imports "
            << format_bytes(h.pinned_imports) << ", device allocations " << format_bytes(h.device_allocations)
            << "), evictable file pages " << format_bytes(h.evictable) << ", anonymous " << format_bytes(h.anonymous)
            << '\n';
  const MachineMemory& m = h.machine;
  std::cout << "machine:             " << (m.mem_available ? format_bytes(m.mem_available) : std::string("unknown"))
            << " MemAvailable";
  if (m.cgroup_limit)
    std::cout << "; " << printable(m.cgroup) << " " << format_bytes(m.cgroup_limit) << " (headroom "
              << format_bytes(m.cgroup_headroom()) << ")";
  if (m.address_space_limit) std::cout << "; RLIMIT_AS leaves " << format_bytes(m.address_space_left());
  std::cout << "\nmemory verdict:      " << h.verdict << '\n';
}

}  // namespace

int cmd_plan(int argc, char** argv) {
  Args args("plan", "Shows where each tensor would go on a device and why, without loading anything.", {"MODEL"},
            {device_option(),
             links_option(),
             densify_option(),
             range_option(),
             placement_option(),
             budget_option(),
             slots_option(),
             memory_option(),
             max_alloc_option(),
             direct_io_option(),
             lazy_option(),
             only_option("plan"),
             {"--json", "", "print one JSON object", ""}});
  if (!args.parse(argc, argv)) return exit_ok;
  const DeviceOverrides overrides = device_overrides(args);
  PlanOptions options = plan_options(args);
  options.lazy = args.flag("--lazy");

  const Manifest manifest = open_model(args);
  const auto device = open_device(args.get("--device"), overrides);
  const Plan plan = make_plan(manifest, device->info(), options);
  if (args.flag("--json")) std::cout << valid_utf8_json(plan_to_json(plan, manifest)) << '\n';
  else print_plan(plan, manifest, device->info());
  return exit_ok;
}

}  // namespace lwload::cli
