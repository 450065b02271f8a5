// Small text helpers the SVG writers share (report_svg.cpp, report_compare_svg.cpp): SVG is
// written as plain text, so escaping, number formatting and axis ticks live here once.
#pragma once

#include "profile/layer.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>

namespace lwload::profile::svg {

inline std::string escape(std::string_view text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

inline std::string num(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", v);
  return text;
}

inline double to_mib(std::uint64_t bytes) { return static_cast<double>(bytes) / (1 << 20); }

// "1.00 GiB" / "512.3 MiB": sizes in the comparison's summary and drawing.
inline std::string human(std::uint64_t bytes) {
  char text[32];
  if (bytes >= (1ull << 30))
    std::snprintf(text, sizeof text, "%.2f GiB", static_cast<double>(bytes) / (1ull << 30));
  else
    std::snprintf(text, sizeof text, "%.1f MiB", to_mib(bytes));
  return text;
}

// "1.36 s" / "51.7 ms".
inline std::string duration(double ms) {
  char text[32];
  if (ms >= 1000) std::snprintf(text, sizeof text, "%.2f s", ms / 1000);
  else std::snprintf(text, sizeof text, "%.1f ms", ms);
  return text;
}

// 1, 2 or 5 × 10^k: a tick step giving about `ticks` intervals over `range`.
inline double nice_step(double range, int ticks) {
  if (range <= 0) return 1;
  const double raw = range / ticks;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (const double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * power) return m * power;
  return 10 * power;
}

// Tick labels: whole numbers when the step is, one decimal otherwise.
inline std::string tick_label(double value, double step) {
  char text[32];
  std::snprintf(text, sizeof text, step >= 1 ? "%.0f" : "%.1f", value);
  return text;
}

// Each load phase's fill; a phase not listed gets grey.
inline const char* phase_colour(std::string_view name) {
  static constexpr std::pair<std::string_view, const char*> kColours[] = {
      {"allocate", "#f6c28b"}, {"import", "#f3e08a"}, {"read", "#a8d5f2"},   {"upload", "#b8e0a8"},
      {"finish", "#cfe8c4"},   {"verify", "#d4b8ec"}, {"copy", "#f4a9a0"},   {"release", "#e0e0e0"}};
  for (const auto& [phase, colour] : kColours)
    if (name == phase) return colour;
  return "#dddddd";
}

// Long model paths and device names must not run off the picture.
inline std::string clip(std::string text, std::size_t max) {
  if (text.size() > max) text = text.substr(0, max - 3) + "...";
  return text;
}

}  // namespace lwload::profile::svg
