// Report → a self-contained SVG timeline, written as plain text (no library): resident memory
// stacked as anonymous / file-backed / shared over time, the total as a line, horizontal lines
// for the baseline, baseline + model size and the contract's bound, and the load phases shaded
// behind. Meant to be read at a glance: did memory stay under the red line, and what grew.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "lwload/profile.hpp"
#include "profile/svg_text.hpp"

namespace lwload::profile {
namespace {

using namespace svg;

constexpr double kWidth = 1000, kHeight = 560;
constexpr double kLeft = 80, kRight = 190, kTop = 70, kBottom = 60;
constexpr double kPlotW = kWidth - kLeft - kRight, kPlotH = kHeight - kTop - kBottom;

struct Scale {
  double max_ms, max_mib;
  double x(double ms) const { return kLeft + kPlotW * std::clamp(ms / max_ms, 0.0, 1.0); }
  double y(double mib) const { return kTop + kPlotH * (1 - std::clamp(mib / max_mib, 0.0, 1.0)); }
};

// A filled band between two stacked curves: `top(s)` above, `bottom(s)` below, in MiB.
template <typename Top, typename Bottom>
void band(std::string& out, const Report& r, const Scale& sc, Top top, Bottom bottom, const char* colour,
          const char* label) {
  if (r.samples.empty()) return;
  out += "<polygon class=\"band\" fill=\"";
  out += colour;
  out += "\" fill-opacity=\"0.6\" stroke=\"none\" points=\"";
  for (const auto& s : r.samples) out += num(sc.x(s.ms)) + "," + num(sc.y(top(s))) + " ";
  for (auto it = r.samples.rbegin(); it != r.samples.rend(); ++it)
    out += num(sc.x(it->ms)) + "," + num(sc.y(bottom(*it))) + " ";
  out += "\"><title>";
  out += label;
  out += "</title></polygon>\n";
}

// A reference level across the plot, labelled inside its right end (above the line, or below
// it when `below`, so that neighbouring levels keep readable labels).
void hline(std::string& out, const Scale& sc, double mib, const char* colour, const char* dash,
           const std::string& label, bool below = false) {
  const double y = sc.y(mib);
  out += "<line class=\"level\" x1=\"" + num(kLeft) + "\" y1=\"" + num(y) + "\" x2=\"" + num(kLeft + kPlotW) +
         "\" y2=\"" + num(y) + "\" stroke=\"" + colour + "\" stroke-width=\"1.5\"" +
         (dash[0] ? std::string(" stroke-dasharray=\"") + dash + "\"" : "") + "/>\n";
  out += "<text x=\"" + num(kLeft + kPlotW - 4) + "\" y=\"" + num(below ? y + 13 : y - 4) +
         "\" text-anchor=\"end\" font-size=\"11\" stroke=\"white\" stroke-width=\"3\" "
         "paint-order=\"stroke\" fill=\"" +
         colour + "\">" + escape(label) + "</text>\n";
}

}  // namespace

std::string report_to_svg(const Report& r) {
  const double baseline = to_mib(r.baseline.rss);
  const double model_line = to_mib(r.baseline.rss + r.model_bytes);
  const double bound = to_mib(r.contract.bound);
  double max_ms = std::max(r.load_ms, 1.0);
  double max_mib = std::max({bound, model_line, to_mib(r.peak.rss), 1.0});
  for (const auto& s : r.samples) max_ms = std::max(max_ms, s.ms);
  for (const auto& p : r.phases) max_ms = std::max(max_ms, p.end_ms);
  max_mib *= 1.08;  // headroom above the highest line
  const Scale sc{max_ms, max_mib};

  std::string out;
  out.reserve(64 * 1024 + r.samples.size() * 80);
  out += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(kWidth) + "\" height=\"" + num(kHeight) +
         "\" viewBox=\"0 0 " + num(kWidth) + " " + num(kHeight) + "\" font-family=\"sans-serif\">\n";
  out += "<rect x=\"0\" y=\"0\" width=\"" + num(kWidth) + "\" height=\"" + num(kHeight) + "\" fill=\"white\"/>\n";

  // Title: what was loaded where, and the verdict.
  std::string device_id = r.device.substr(0, r.device.find(' '));
  out += "<text x=\"" + num(kLeft) + "\" y=\"24\" font-size=\"16\" font-weight=\"bold\">" +
         escape(clip("lwload profile: " + r.model + " on " + device_id + ", " + r.placement, 95)) + "</text>\n";
  char subtitle[512];
  std::snprintf(subtitle, sizeof subtitle, "%s, %s, %.1f MiB model, largest tensor %.1f MiB; %s memory",
                clip(r.device, 70).c_str(), r.format.c_str(), to_mib(r.model_bytes), to_mib(r.largest_tensor),
                r.memory.c_str());
  out += "<text x=\"" + num(kLeft) + "\" y=\"42\" font-size=\"12\" fill=\"#333\">" + escape(subtitle) + "</text>\n";
  std::snprintf(subtitle, sizeof subtitle,
                "load %.1f ms; peak %.1f MiB (+%.1f MiB: anon +%.1f, file +%.1f); bound %.1f MiB: %s", r.load_ms,
                to_mib(r.peak.rss), to_mib(r.growth.rss), to_mib(r.growth.anon), to_mib(r.growth.file), bound,
                r.contract.held ? "HELD" : "VIOLATED");
  out += "<text x=\"" + num(kLeft) + "\" y=\"58\" font-size=\"12\" font-weight=\"bold\" fill=\"" +
         (r.contract.held ? std::string("#226622") : std::string("#bb0000")) + "\">" + escape(subtitle) + "</text>\n";

  // Load phases, shaded behind everything, labelled at the top of the plot.
  out += "<g class=\"phases\">\n";
  for (const auto& p : r.phases) {
    const double x0 = sc.x(p.begin_ms), x1 = std::max(sc.x(p.end_ms), x0 + 1);
    out += "<rect class=\"phase\" x=\"" + num(x0) + "\" y=\"" + num(kTop) + "\" width=\"" + num(x1 - x0) +
           "\" height=\"" + num(kPlotH) + "\" fill=\"" + phase_colour(p.name) + "\" fill-opacity=\"0.45\"><title>" +
           escape(p.name) + "</title></rect>\n";
    if (x1 - x0 > 6.5 * static_cast<double>(p.name.size()) + 6)  // room for the label
      out += "<text x=\"" + num(x0 + 3) + "\" y=\"" + num(kTop + 12) + "\" font-size=\"10\" fill=\"#555\">" +
             escape(p.name) + "</text>\n";
  }
  out += "</g>\n";

  // Grid and axes.
  out += "<g class=\"axes\" font-size=\"11\" fill=\"#333\">\n";
  const double ystep = nice_step(max_mib, 6);
  for (double v = 0; v <= max_mib + 1e-9; v += ystep) {
    const double y = sc.y(v);
    out += "<line x1=\"" + num(kLeft) + "\" y1=\"" + num(y) + "\" x2=\"" + num(kLeft + kPlotW) + "\" y2=\"" + num(y) +
           "\" stroke=\"#e5e5e5\"/>\n";
    out += "<text x=\"" + num(kLeft - 6) + "\" y=\"" + num(y + 4) + "\" text-anchor=\"end\">" + tick_label(v, ystep) +
           "</text>\n";
  }
  const double xstep = nice_step(max_ms, 8);
  for (double v = 0; v <= max_ms + 1e-9; v += xstep) {
    const double x = sc.x(v);
    out += "<line x1=\"" + num(x) + "\" y1=\"" + num(kTop + kPlotH) + "\" x2=\"" + num(x) + "\" y2=\"" +
           num(kTop + kPlotH + 5) + "\" stroke=\"#333\"/>\n";
    out += "<text x=\"" + num(x) + "\" y=\"" + num(kTop + kPlotH + 18) + "\" text-anchor=\"middle\">" +
           tick_label(v, xstep) + "</text>\n";
  }
  out += "<rect x=\"" + num(kLeft) + "\" y=\"" + num(kTop) + "\" width=\"" + num(kPlotW) + "\" height=\"" +
         num(kPlotH) + "\" fill=\"none\" stroke=\"#333\"/>\n";
  out += "<text x=\"" + num(kLeft + kPlotW / 2) + "\" y=\"" + num(kHeight - 18) +
         "\" text-anchor=\"middle\" font-size=\"12\">time since profiling started (ms)</text>\n";
  out += "<text transform=\"translate(22," + num(kTop + kPlotH / 2) +
         ") rotate(-90)\" text-anchor=\"middle\" font-size=\"12\">resident memory (MiB)</text>\n";
  out += "</g>\n";

  // Memory: anonymous at the bottom, file-backed and shared stacked on it, total as a line.
  out += "<g class=\"memory\">\n";
  band(
      out, r, sc, [](const MemorySample& s) { return to_mib(s.anon); }, [](const MemorySample&) { return 0.0; },
      "#e4572e", "anonymous");
  band(
      out, r, sc, [](const MemorySample& s) { return to_mib(s.anon + s.file); },
      [](const MemorySample& s) { return to_mib(s.anon); }, "#4c9be8", "file-backed");
  band(
      out, r, sc, [](const MemorySample& s) { return to_mib(s.anon + s.file + s.shmem); },
      [](const MemorySample& s) { return to_mib(s.anon + s.file); }, "#9b59b6", "shared");
  out += "<polyline class=\"rss\" fill=\"none\" stroke=\"#222\" stroke-width=\"1.5\" points=\"";
  for (const auto& s : r.samples) out += num(sc.x(s.ms)) + "," + num(sc.y(to_mib(s.rss))) + " ";
  out += "\"><title>total resident (VmRSS)</title></polyline>\n";
  if (!r.in_flight.empty()) {
    // Bytes read into staging and not yet uploaded, as a step line on the same MiB axis.
    out +=
        "<polyline class=\"in-flight\" fill=\"none\" stroke=\"#2a9d4b\" stroke-width=\"1\" "
        "stroke-dasharray=\"3,2\" points=\"";
    double last = 0;
    for (const auto& p : r.in_flight) {
      out += num(sc.x(p.ms)) + "," + num(sc.y(last)) + " ";
      last = to_mib(p.bytes);
      out += num(sc.x(p.ms)) + "," + num(sc.y(last)) + " ";
    }
    out += "\"><title>bytes in flight (staging)</title></polyline>\n";
  }
  out += "</g>\n";

  // Reference levels, labelled in the right margin.
  out += "<g class=\"levels\">\n";
  char label[96];
  std::snprintf(label, sizeof label, "baseline %.0f MiB", baseline);
  // Below its line unless that would run into the time axis.
  hline(out, sc, baseline, "#777777", "4,3", label, sc.y(baseline) + 13 < kTop + kPlotH - 2);
  std::snprintf(label, sizeof label, "baseline + model %.0f MiB", model_line);
  hline(out, sc, model_line, "#1f5fbf", "8,4", label);
  std::snprintf(label, sizeof label, "bound %.0f MiB", bound);
  hline(out, sc, bound, "#d62728", "", label);
  out += "</g>\n";

  // When the load began and when the weights were ready.
  if (r.load_ms > 0) {
    out += "<g class=\"markers\" font-size=\"10\" fill=\"#444\">\n";
    const double begin = sc.x(r.load_begin_ms), ready = sc.x(r.load_begin_ms + r.load_ms);
    for (const double x : {begin, ready})
      out += "<line x1=\"" + num(x) + "\" y1=\"" + num(kTop) + "\" x2=\"" + num(x) + "\" y2=\"" + num(kTop + kPlotH) +
             "\" stroke=\"#444\" stroke-width=\"1\" stroke-dasharray=\"1,3\"/>\n";
    const double label_y = kTop + kPlotH + 27;  // under the tick labels: the plot keeps its own labels
    if (ready - begin < 60) {                   // too close for two labels
      out += "<text x=\"" + num(ready + 2) + "\" y=\"" + num(label_y) + "\">load() .. ready</text>\n";
    } else {
      out += "<text x=\"" + num(begin + 2) + "\" y=\"" + num(label_y) + "\">load()</text>\n";
      out += "<text x=\"" + num(ready - 2) + "\" y=\"" + num(label_y) + "\" text-anchor=\"end\">ready</text>\n";
    }
    out += "</g>\n";
  }

  // Legend in the right margin: the memory series, then the phases that occurred.
  out += "<g class=\"legend\" font-size=\"11\">\n";
  struct Entry {
    std::string colour, text;
    bool line;
  };
  std::vector<Entry> entries = {{"#e4572e", "anonymous (RssAnon)", false},
                                {"#4c9be8", "file-backed (RssFile)", false},
                                {"#9b59b6", "shared (RssShmem)", false},
                                {"#222222", "total (VmRSS)", true}};
  if (!r.in_flight.empty()) entries.push_back({"#2a9d4b", "bytes in flight (staging)", true});
  for (const auto& p : r.phases) {
    const std::string text = "phase: " + p.name;
    if (std::none_of(entries.begin(), entries.end(), [&](const Entry& e) { return e.text == text; }))
      entries.push_back({phase_colour(p.name), text, false});
  }
  double ly = kTop + 12;
  for (const auto& e : entries) {
    const double lx = kLeft + kPlotW + 10;
    if (e.line)
      out += "<line x1=\"" + num(lx) + "\" y1=\"" + num(ly - 4) + "\" x2=\"" + num(lx + 14) + "\" y2=\"" + num(ly - 4) +
             "\" stroke=\"" + e.colour + "\" stroke-width=\"2\"/>\n";
    else
      out += "<rect x=\"" + num(lx) + "\" y=\"" + num(ly - 10) + "\" width=\"14\" height=\"10\" fill=\"" + e.colour +
             "\" fill-opacity=\"0.7\"/>\n";
    out += "<text x=\"" + num(lx + 20) + "\" y=\"" + num(ly) + "\">" + escape(e.text) + "</text>\n";
    ly += 17;
  }
  out += "</g>\n";
  out += "</svg>\n";
  return out;
}

}  // namespace lwload::profile
