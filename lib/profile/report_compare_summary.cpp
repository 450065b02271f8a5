// The text summary of `lwload profile --compare`: each loader's peaks, time to ready and verdict,
// the ratios of every other loader to the last one (lwload as asked), and one line to remember.
#include <cstdio>
#include <ostream>

#include "lwload/profile.hpp"
#include "profile/svg_text.hpp"

namespace lwload::profile {
namespace {

using svg::duration;
using svg::human;

// a / b; below 1 MiB the denominator is "nothing", so the ratio is a floor (">= N x").
std::string ratio(std::uint64_t a, std::uint64_t b) {
  constexpr std::uint64_t floor = 1ull << 20;
  char text[48];
  if (b < floor) std::snprintf(text, sizeof text, ">= %.0fx", static_cast<double>(a) / floor);
  else std::snprintf(text, sizeof text, "%.2fx", static_cast<double>(a) / static_cast<double>(b));
  return text;
}

}  // namespace

void write_comparison_summary(std::ostream& out, const std::vector<Series>& series) {
  if (series.empty()) return;
  const Report& first = series.front().report;
  out << "model           " << first.model << " (" << first.format << ", " << first.tensor_count << " tensors, "
      << human(first.model_bytes) << ")\n";
  char line[512];
  for (const auto& s : series) {
    const Report& r = s.report;
    std::snprintf(line, sizeof line, "%-22s peak +%s anonymous, +%s file-backed; ready in %s; %s; contract %s\n",
                  s.label.c_str(), human(r.growth.anon).c_str(), human(r.growth.file).c_str(),
                  duration(r.load_ms).c_str(), r.device.c_str(), r.contract.held ? "HELD" : "VIOLATED");
    out << line;
  }
  const Series& last = series.back();
  for (std::size_t i = 0; i + 1 < series.size(); ++i) {
    const Report& r = series[i].report;
    std::snprintf(line, sizeof line, "%s / %s: anonymous peak %s, resident peak %s, time to ready %.2fx\n",
                  series[i].label.c_str(), last.label.c_str(), ratio(r.growth.anon, last.report.growth.anon).c_str(),
                  ratio(r.growth.rss, last.report.growth.rss).c_str(),
                  last.report.load_ms > 0 ? r.load_ms / last.report.load_ms : 0.0);
    out << line;
  }
  out << "in short: ";
  for (std::size_t i = 0; i < series.size(); ++i) {
    const Report& r = series[i].report;
    out << (i ? "; " : "") << series[i].label << ": peak +" << human(r.growth.anon) << " anonymous";
    if (r.growth.file >= (16ull << 20)) out << ", " << human(r.growth.file) << " shared file pages";
    out << ", " << duration(r.load_ms);
  }
  out << '\n';
}

}  // namespace lwload::profile
