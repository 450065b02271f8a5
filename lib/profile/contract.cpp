// docs/ARCHITECTURE.md "Memory contracts" as arithmetic: which bound applies to a load, and whether the
// measured peak stayed inside it.
#include <algorithm>
#include <cstdio>

#include "lwload/error.hpp"
#include "lwload/profile.hpp"

namespace lwload::profile {
std::string mib(std::uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return text;
}

MemoryFigures figures_of(const MemorySample& s) noexcept { return {s.rss, s.anon, s.file, s.shmem}; }

MemoryFigures growth(const MemoryFigures& a, const MemoryFigures& b) noexcept {
  const auto sub = [](std::uint64_t x, std::uint64_t y) { return x > y ? x - y : 0; };
  return {sub(a.rss, b.rss), sub(a.anon, b.anon), sub(a.file, b.file), sub(a.shmem, b.shmem)};
}

Contract evaluate_contract(const ContractInputs& in, const MemoryFigures& baseline, const MemoryFigures& peak) {
  Contract c;
  const std::uint64_t bookkeeping = in.tensor_count * kBookkeepingPerTensor;
  const std::string per_tensor = bookkeeping >= (1u << 20) ? str(" + ", kBookkeepingPerTensor, " B per tensor") : "";
  const bool discrete_rule = in.memory == MemoryModel::discrete || in.staged_bytes > 0;
  bool resident_ok = true;
  if (!discrete_rule) {
    c.rule = "unified: peak <= baseline + model bytes + largest tensor + 16 MiB" + per_tensor;
    if (in.page_rounding > 0) c.rule += " + page rounding";
    c.bound = baseline.rss + in.model_bytes + in.largest_tensor + kFixedOverhead + bookkeeping + in.page_rounding;
    if (in.zero_copy_bytes > 0 && !in.lazy) resident_ok = in.resident_bytes * 10 >= in.zero_copy_bytes * 9;
    if (in.zero_copy_bytes > 0) {
      // Zero-copy growth must be file-backed pages; only tensors that could not be imported
      // (direct) may add anonymous memory.
      c.anon_growth_limit = kZeroCopyAnonLimit + bookkeeping + in.direct_bytes;
      c.rule += "; zero-copy: anonymous growth <= 16 MiB" + per_tensor;
      if (in.direct_bytes > 0) c.rule += " + direct tensors";
    }
  } else {
    // Staging keeps host memory at the budget whatever the model's size; bytes of buffers that
    // live in this process (unified placements, in-process "device" memory) come on top.
    std::uint64_t in_process = in.zero_copy_bytes + in.direct_bytes;
    if (in.device_buffers_in_process) in_process += in.staged_bytes;
    c.rule = "discrete: peak <= baseline + staging budget + 16 MiB" + per_tensor;
    if (in_process > 0) c.rule += " + buffers held in this process";
    c.bound = baseline.rss + in.staging_budget + kFixedOverhead + bookkeeping + in_process;
  }

  // The plan's side (docs/ARCHITECTURE.md "Over-memory loads"): what it said must be resident against what the
  // machine had, and what the load actually grew by against the same.
  const std::uint64_t available = in.host.machine.host_available();
  const MemoryFigures grown = growth(peak, baseline);
  bool machine_ok = true;
  if (available != 0) {
    machine_ok = in.host.resident <= available && grown.rss <= available;
    c.rule += "; machine: planned resident bytes and RSS growth <= available host memory";
  }
  const bool rss_ok = peak.rss <= c.bound;
  const bool anon_ok = !c.anon_growth_limit || grown.anon <= *c.anon_growth_limit;
  c.held = rss_ok && anon_ok && resident_ok && machine_ok;
  c.verdict = str("peak ", mib(peak.rss), rss_ok ? " <= " : " > ", "bound ", mib(c.bound), " (growth ", mib(grown.rss),
                  " of ", mib(c.bound - baseline.rss), " allowed)");
  if (c.anon_growth_limit)
    c.verdict += str("; anonymous growth ", mib(grown.anon), anon_ok ? " <= " : " > ", mib(*c.anon_growth_limit));
  if (available != 0)
    c.verdict += str("; machine: planned resident ", mib(in.host.resident), " (pinned ", mib(in.host.pinned),
                     ", anonymous ", mib(in.host.anonymous), ", evictable ", mib(in.host.evictable),
                     in.host.lazy ? " not counted: lazy" : "", "), growth ", mib(grown.rss),
                     machine_ok ? " <= " : " > ", mib(available), " available (", in.host.machine.host_bound_by(), ")");
  if (in.zero_copy_bytes > 0 && !discrete_rule) {
    if (in.lazy)
      c.verdict += str("; lazy: zero_copy pages not required resident (", mib(in.resident_bytes), " of ",
                       mib(in.zero_copy_bytes), " resident at ready)");
    else
      c.verdict += str("; resident ", mib(in.resident_bytes), resident_ok ? " >= " : " < ", "90% of ",
                       mib(in.zero_copy_bytes), " zero_copy");
  }
  return c;
}

void finish_report(Report& report, const MemorySample& baseline, const MemorySample& peak, bool hwm_exact) {
  report.baseline = figures_of(baseline);
  report.peak = figures_of(peak);
  // The kernel's high-water mark catches a peak between two samples.
  if (hwm_exact) report.peak.rss = std::max(report.peak.rss, peak.hwm);
  report.hwm_exact = hwm_exact;
  report.growth = growth(report.peak, report.baseline);
  report.contract = evaluate_contract(report.inputs, report.baseline, report.peak);
}

}  // namespace lwload::profile
