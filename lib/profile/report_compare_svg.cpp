// Series → one SVG comparing loaders (`lwload profile --compare`), written as plain text like
// report_svg.cpp. Each loader ran in its own process, so the memory axis is growth above each
// process's own baseline and the time axis starts at each load's begin: what a reader compares is
// how much each loader added and how long it took. Anonymous growth (copies of the weights) is a
// solid line, file-backed growth (mapped file pages, shared with the page cache) a dashed one.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "lwload/profile.hpp"
#include "profile/svg_text.hpp"

namespace lwload::profile {
namespace {

using namespace svg;

constexpr double kWidth = 1000;
constexpr double kLeft = 140, kRight = 40, kPlotW = kWidth - kLeft - kRight, kPlotH = 340;
constexpr double kLegendRow = 18, kLaneH = 16;
constexpr const char* kColours[] = {"#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"};
// Peaks below this are "nothing grew": not worth a label of their own on the file-backed curve.
constexpr std::uint64_t kLabelFloor = 16ull << 20;

const char* colour(std::size_t i) { return kColours[i % std::size(kColours)]; }

// "1.00 GiB" from 1 GiB up, "12.3 MiB" below: the units a person remembers.

double signed_growth(std::uint64_t value, std::uint64_t baseline) {
  return value > baseline ? to_mib(value - baseline) : 0.0;
}

// One series' curve points: (ms since its load began, MiB above its baseline). The last sample
// before the load is kept at time 0, so every curve starts from its baseline.
struct Point {
  double ms, anon, file;
};
std::vector<Point> points_of(const Report& r) {
  std::vector<Point> out;
  const MemorySample* before = nullptr;
  for (const auto& s : r.samples) {
    const double t = s.ms - r.load_begin_ms;
    if (t < 0) {
      before = &s;
      continue;
    }
    if (out.empty() && before)
      out.push_back({0, signed_growth(before->anon, r.baseline.anon), signed_growth(before->file, r.baseline.file)});
    out.push_back({t, signed_growth(s.anon, r.baseline.anon), signed_growth(s.file, r.baseline.file)});
  }
  return out;
}

struct Frame {
  double top, max_ms, max_mib, ms_per_unit;
  double x(double ms) const { return kLeft + kPlotW * std::clamp(ms / max_ms, 0.0, 1.0); }
  double y(double mib) const { return top + kPlotH * (1 - std::clamp(mib / max_mib, 0.0, 1.0)); }
  double bottom() const { return top + kPlotH; }
};

// Labels on the curves must not print over each other: each is moved up until it is clear.
class LabelPlacer {
 public:
  double place(double x, double y, double width, bool anchor_end) {
    const double left = anchor_end ? x - width : x;
    for (int tries = 0; tries < 40; ++tries) {
      const bool clash = std::any_of(boxes_.begin(), boxes_.end(), [&](const Box& b) {
        return left < b.right && left + width > b.left && y - 11 < b.bottom && y + 3 > b.top;
      });
      if (!clash) break;
      y -= 14;
    }
    boxes_.push_back({left, left + width, y - 11, y + 3});
    return y;
  }

 private:
  struct Box {
    double left, right, top, bottom;
  };
  std::vector<Box> boxes_;
};

void polyline(std::string& out, const std::vector<Point>& pts, const Frame& f, bool anon, const char* stroke,
              const std::string& title) {
  out += "<polyline fill=\"none\" stroke=\"";
  out += stroke;
  out += anon ? "\" stroke-width=\"2.5\"" : "\" stroke-width=\"2\" stroke-dasharray=\"7,4\"";
  out += " stroke-linejoin=\"round\" points=\"";
  for (const auto& p : pts) out += num(f.x(p.ms)) + "," + num(f.y(anon ? p.anon : p.file)) + " ";
  out += "\"><title>" + escape(title) + "</title></polyline>\n";
}

// A dot on the curve's peak and its value beside it, in the series' colour.
void peak_label(std::string& out, LabelPlacer& placer, const Frame& f, double ms, double mib, const char* stroke,
                const std::string& text) {
  const double x = f.x(ms), y = f.y(mib);
  const bool anchor_end = x > kLeft + kPlotW * 0.6;
  const double width = 7.0 * static_cast<double>(text.size());  // bold 11 px sans, generously
  const double ly = placer.place(anchor_end ? x - 7 : x + 7, std::max(y - 6, f.top + 12), width, anchor_end);
  out += "<circle cx=\"" + num(x) + "\" cy=\"" + num(y) + "\" r=\"4\" fill=\"" + stroke + "\"/>\n";
  out += "<text x=\"" + num(anchor_end ? x - 7 : x + 7) + "\" y=\"" + num(ly) +
         "\" font-size=\"11\" font-weight=\"bold\"" + (anchor_end ? " text-anchor=\"end\"" : "") + " fill=\"" + stroke +
         "\" stroke=\"white\" stroke-width=\"3\" paint-order=\"stroke\">" + escape(text) + "</text>\n";
}

}  // namespace

std::string comparison_to_svg(const std::vector<Series>& series) {
  const std::size_t n = series.size();
  std::vector<std::vector<Point>> curves;
  double max_ms = 1, max_mib = 1;
  std::uint64_t model_bytes = 0;
  for (const auto& s : series) {
    curves.push_back(points_of(s.report));
    for (const auto& p : curves.back()) max_mib = std::max({max_mib, p.anon, p.file});
    max_ms = std::max(max_ms, s.report.load_ms);
    if (!curves.back().empty()) max_ms = std::max(max_ms, curves.back().back().ms);
    for (const auto& p : s.report.phases) max_ms = std::max(max_ms, p.end_ms - s.report.load_begin_ms);
    max_mib = std::max({max_mib, to_mib(s.report.growth.anon), to_mib(s.report.growth.file)});
    model_bytes = std::max(model_bytes, s.report.model_bytes);
  }
  max_mib = std::max(max_mib, to_mib(model_bytes)) * 1.15;  // headroom for the peak labels
  const bool seconds = max_ms >= 2000;
  const double top = 62 + kLegendRow * static_cast<double>(n + 1) + 8;
  const Frame f{top, max_ms, max_mib, seconds ? 1000.0 : 1.0};
  const double lanes_top = f.bottom() + 48;
  const double height = lanes_top + kLaneH * static_cast<double>(n) + 28;

  std::string out;
  out += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(kWidth) + "\" height=\"" + num(height) +
         "\" viewBox=\"0 0 " + num(kWidth) + " " + num(height) + "\" font-family=\"sans-serif\">\n";
  out += "<rect x=\"0\" y=\"0\" width=\"" + num(kWidth) + "\" height=\"" + num(height) + "\" fill=\"white\"/>\n";
  if (n == 0) return out + "</svg>\n";

  // Title, what the axes mean, and the legend: one row per loader with its figures and verdict.
  const Report& first = series.front().report;
  char text[512];
  std::string title = "loading " + first.model.substr(first.model.find_last_of('/') + 1);  // the file's name
  std::snprintf(text, sizeof text, " (%s, %llu tensors, %s): ", first.format.c_str(),
                static_cast<unsigned long long>(first.tensor_count), human(first.model_bytes).c_str());
  title += text;
  for (std::size_t i = 0; i < n; ++i) title += (i ? " vs " : "") + series[i].label;
  out += "<text x=\"20\" y=\"24\" font-size=\"16\" font-weight=\"bold\">" + escape(clip(title, 100)) + "</text>\n";
  out +=
      "<text x=\"20\" y=\"42\" font-size=\"12\" fill=\"#333\">memory each loader added above its own "
      "baseline, from the start of its load; each loader ran in a fresh process</text>\n";
  out += "<g class=\"legend\" font-size=\"12\">\n";
  for (std::size_t i = 0; i < n; ++i) {
    const Report& r = series[i].report;
    const double y = 62 + kLegendRow * static_cast<double>(i);
    out += "<line x1=\"20\" y1=\"" + num(y - 4) + "\" x2=\"44\" y2=\"" + num(y - 4) + "\" stroke=\"" + colour(i) +
           "\" stroke-width=\"3\"/>\n";
    std::snprintf(text, sizeof text, "%s: peak +%s anonymous, +%s file-backed; ready in %s on %s; contract ",
                  series[i].label.c_str(), human(r.growth.anon).c_str(), human(r.growth.file).c_str(),
                  duration(r.load_ms).c_str(), clip(r.device.substr(0, r.device.find(" (")), 24).c_str());
    out += "<text x=\"52\" y=\"" + num(y) + "\"><tspan font-weight=\"bold\" fill=\"" + colour(i) + "\">" +
           escape(series[i].label) + "</tspan>" + escape(std::string(text).substr(series[i].label.size())) +
           "<tspan font-weight=\"bold\" fill=\"" + (r.contract.held ? "#226622" : "#bb0000") + "\">" +
           (r.contract.held ? "HELD" : "VIOLATED") + "</tspan></text>\n";
  }
  // The key to the two line styles, under the loaders.
  const double key_y = 62 + kLegendRow * static_cast<double>(n);
  out += "<line x1=\"20\" y1=\"" + num(key_y - 4) + "\" x2=\"44\" y2=\"" + num(key_y - 4) +
         "\" stroke=\"#555\" stroke-width=\"2.5\"/>\n";
  out += "<text x=\"52\" y=\"" + num(key_y) + "\" fill=\"#333\">anonymous (copies of the weights)</text>\n";
  out += "<line x1=\"290\" y1=\"" + num(key_y - 4) + "\" x2=\"314\" y2=\"" + num(key_y - 4) +
         "\" stroke=\"#555\" stroke-width=\"2\" stroke-dasharray=\"7,4\"/>\n";
  out += "<text x=\"322\" y=\"" + num(key_y) +
         "\" fill=\"#333\">file-backed (mapped file pages, shared with the page cache)</text>\n";
  out += "</g>\n";

  // Grid, axes and their units.
  out += "<g class=\"axes\" font-size=\"11\" fill=\"#333\">\n";
  const double ystep = nice_step(max_mib, 6);
  for (double v = 0; v <= max_mib + 1e-9; v += ystep) {
    out += "<line x1=\"" + num(kLeft) + "\" y1=\"" + num(f.y(v)) + "\" x2=\"" + num(kLeft + kPlotW) + "\" y2=\"" +
           num(f.y(v)) + "\" stroke=\"#e5e5e5\"/>\n";
    out += "<text x=\"" + num(kLeft - 6) + "\" y=\"" + num(f.y(v) + 4) + "\" text-anchor=\"end\">" +
           tick_label(v, ystep) + "</text>\n";
  }
  const double unit_max = max_ms / f.ms_per_unit;
  const double xstep = nice_step(unit_max, 10);
  for (double v = 0; v <= unit_max + 1e-9; v += xstep) {
    const double x = f.x(v * f.ms_per_unit);
    out += "<line x1=\"" + num(x) + "\" y1=\"" + num(f.bottom()) + "\" x2=\"" + num(x) + "\" y2=\"" +
           num(f.bottom() + 5) + "\" stroke=\"#333\"/>\n";
    out += "<text x=\"" + num(x) + "\" y=\"" + num(f.bottom() + 18) + "\" text-anchor=\"middle\">" +
           tick_label(v, xstep) + "</text>\n";
  }
  out += "<rect x=\"" + num(kLeft) + "\" y=\"" + num(f.top) + "\" width=\"" + num(kPlotW) + "\" height=\"" +
         num(kPlotH) + "\" fill=\"none\" stroke=\"#333\"/>\n";
  out += "<text x=\"" + num(kLeft + kPlotW / 2) + "\" y=\"" + num(f.bottom() + 34) +
         "\" text-anchor=\"middle\" font-size=\"12\">" + (seconds ? "seconds" : "milliseconds") +
         " since the load began</text>\n";
  out += "<text transform=\"translate(24," + num(f.top + kPlotH / 2) +
         ") rotate(-90)\" text-anchor=\"middle\" font-size=\"12\">MiB above the baseline</text>\n";
  out += "</g>\n";

  // The model's size: a copying loader's curve must reach it; zero-copy's anonymous one must not.
  const double model_y = f.y(to_mib(model_bytes));
  out += "<line x1=\"" + num(kLeft) + "\" y1=\"" + num(model_y) + "\" x2=\"" + num(kLeft + kPlotW) + "\" y2=\"" +
         num(model_y) + "\" stroke=\"#777\" stroke-width=\"1\" stroke-dasharray=\"2,3\"/>\n";
  out += "<text x=\"" + num(kLeft + 4) + "\" y=\"" + num(model_y - 4) +
         "\" font-size=\"11\" fill=\"#555\">model size " + human(model_bytes) + "</text>\n";

  // The curves, then every loader's peaks and its ready time on them.
  out += "<g class=\"curves\">\n";
  for (std::size_t i = 0; i < n; ++i) {
    polyline(out, curves[i], f, false, colour(i), series[i].label + ": file-backed growth");
    polyline(out, curves[i], f, true, colour(i), series[i].label + ": anonymous growth");
  }
  out += "</g>\n<g class=\"peaks\">\n";
  LabelPlacer placer;
  placer.place(kLeft + 4, model_y - 4, 130, false);  // the model-size label's place is taken
  for (std::size_t i = 0; i < n; ++i) {
    const Report& r = series[i].report;
    const auto& pts = curves[i];
    if (pts.empty()) continue;
    const auto anon =
        std::max_element(pts.begin(), pts.end(), [](const Point& a, const Point& b) { return a.anon < b.anon; });
    const auto file =
        std::max_element(pts.begin(), pts.end(), [](const Point& a, const Point& b) { return a.file < b.file; });
    peak_label(out, placer, f, anon->ms, anon->anon, colour(i),
               series[i].label + ": +" + human(r.growth.anon) + " anonymous");
    if (r.growth.file >= kLabelFloor)
      peak_label(out, placer, f, file->ms, file->file, colour(i),
                 series[i].label + ": +" + human(r.growth.file) + " file-backed");
    // Ready: a tick on the time axis.
    const double x = f.x(r.load_ms);
    out += "<line x1=\"" + num(x) + "\" y1=\"" + num(f.top) + "\" x2=\"" + num(x) + "\" y2=\"" + num(f.bottom()) +
           "\" stroke=\"" + colour(i) + "\" stroke-width=\"1\" stroke-dasharray=\"1,3\"/>\n";
    const std::string ready = "ready " + duration(r.load_ms);
    const bool anchor_end = x > kLeft + kPlotW * 0.6;
    const double ly =
        placer.place(anchor_end ? x - 3 : x + 3, f.bottom() - 6, 6.2 * static_cast<double>(ready.size()), anchor_end);
    out += "<text x=\"" + num(anchor_end ? x - 3 : x + 3) + "\" y=\"" + num(ly) + "\" font-size=\"11\"" +
           (anchor_end ? " text-anchor=\"end\"" : "") + " fill=\"" + colour(i) +
           "\" stroke=\"white\" stroke-width=\"3\" paint-order=\"stroke\">" + escape(ready) + "</text>\n";
  }
  out += "</g>\n";

  // Phases: one lane per loader under the time axis, shaded and named.
  out += "<g class=\"phases\" font-size=\"10\">\n";
  for (std::size_t i = 0; i < n; ++i) {
    const Report& r = series[i].report;
    const double y = lanes_top + kLaneH * static_cast<double>(i);
    out += "<text x=\"" + num(kLeft - 6) + "\" y=\"" + num(y + 11) +
           "\" text-anchor=\"end\" font-weight=\"bold\" fill=\"" + colour(i) + "\">" +
           escape(clip(series[i].label, 22)) + "</text>\n";
    out += "<rect x=\"" + num(kLeft) + "\" y=\"" + num(y) + "\" width=\"" + num(kPlotW) + "\" height=\"" +
           num(kLaneH - 2) + "\" fill=\"#f7f7f7\"/>\n";
    for (const auto& p : r.phases) {
      const double x0 = f.x(p.begin_ms - r.load_begin_ms), x1 = std::max(f.x(p.end_ms - r.load_begin_ms), x0 + 1);
      out += "<rect x=\"" + num(x0) + "\" y=\"" + num(y) + "\" width=\"" + num(x1 - x0) + "\" height=\"" +
             num(kLaneH - 2) + "\" fill=\"" + phase_colour(p.name) + "\"><title>" +
             escape(series[i].label + ": " + p.name) + "</title></rect>\n";
      if (x1 - x0 > 6 * static_cast<double>(p.name.size()) + 6)
        out +=
            "<text x=\"" + num(x0 + 3) + "\" y=\"" + num(y + 11) + "\" fill=\"#333\">" + escape(p.name) + "</text>\n";
    }
  }
  out +=
      "<text x=\"" + num(kLeft) + "\" y=\"" + num(lanes_top - 6) + "\" font-size=\"11\" fill=\"#555\">phases</text>\n";
  out += "</g>\n</svg>\n";
  return out;
}

}  // namespace lwload::profile
