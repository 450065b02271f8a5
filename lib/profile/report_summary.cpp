// The human summary of a profiled load: the figures a person checks the contract with.
#include <cstdio>
#include <ostream>

#include "lwload/error.hpp"
#include "lwload/profile.hpp"

namespace lwload::profile {
namespace {

// Right-aligned for the table's columns.
std::string mib_column(std::uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%11.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return text;
}

void row(std::ostream& out, const char* label, const MemoryFigures& f) {
  char head[24];
  std::snprintf(head, sizeof head, "%-16s", label);
  out << head << mib_column(f.rss) << mib_column(f.anon) << mib_column(f.file) << mib_column(f.shmem) << '\n';
}

}  // namespace

void write_summary(std::ostream& out, const Report& r) {
  char line[256];
  out << "model           " << r.model << " (" << r.format << ", " << r.tensor_count << " tensors, "
      << mib(r.model_bytes) << ")\n";
  out << "device          " << r.device << ", " << r.memory << " memory\n";
  out << "placement       " << r.placement;
  if (!r.io_engine.empty()) out << ", io " << r.io_engine;
  out << '\n';
  const double seconds = r.load_ms / 1000.0;
  std::snprintf(line, sizeof line, "load time       %.1f ms (%.2f GiB/s)\n", r.load_ms,
                seconds > 0 ? static_cast<double>(r.model_bytes) / (1ull << 30) / seconds : 0.0);
  out << line;
  if (r.inputs.zero_copy_bytes > 0)
    out << "zero_copy       " << mib(r.inputs.resident_bytes) << " of " << mib(r.inputs.zero_copy_bytes) << " resident"
        << (r.inputs.lazy ? " (lazy)" : str(", populated in ", static_cast<int>(r.populate_ms * 10) / 10.0, " ms"))
        << '\n';
  if (r.pss_baseline && r.pss_loaded) {
    const auto grown = [](std::uint64_t a, std::uint64_t b) { return a > b ? a - b : 0; };
    out << "pss growth      " << mib(grown(r.pss_loaded->pss, r.pss_baseline->pss)) << " (file "
        << mib(grown(r.pss_loaded->pss_file, r.pss_baseline->pss_file))
        << "; shared pages count 1/N for N processes mapping them)\n";
  }
  out << "largest tensor  " << r.largest_tensor_name << " " << mib(r.largest_tensor) << '\n';
  if (r.staging_budget > 0 && r.inputs.staged_bytes > 0)
    out << "staging budget  " << mib(r.staging_budget) << " (max in flight " << mib(r.max_in_flight) << ")\n";
  std::snprintf(line, sizeof line, "\n%-16s%15s%15s%15s%15s\n", "", "total", "anon", "file", "shmem");
  out << line;
  row(out, "baseline", r.baseline);
  row(out, "peak", r.peak);
  row(out, "peak - baseline", r.growth);
  out << '\n';
  out << "bound           " << mib(r.contract.bound) << "  (" << r.contract.rule << ")\n";
  out << "contract        " << (r.contract.held ? "HELD" : "VIOLATED") << ": " << r.contract.verdict << '\n';
  if (r.hwm_exact) out << "                (peak total is the kernel's VmHWM, reset before the load)\n";
}

}  // namespace lwload::profile
