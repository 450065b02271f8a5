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

// The length of the well-formed UTF-8 sequence (RFC 3629) at text[i] whose code point XML 1.0
// allows as a character, or 0: a stray or truncated byte, an overlong form, a surrogate, a code
// point past U+10FFFF, U+FFFE or U+FFFF. (Names are a file's bytes, not text.)
inline std::size_t xml_utf8_sequence(std::string_view text, std::size_t i) {
  const auto at = [&](std::size_t k) { return i + k < text.size() ? static_cast<unsigned char>(text[i + k]) : 0u; };
  const auto cont = [&](std::size_t k, unsigned lo = 0x80, unsigned hi = 0xbf) { return at(k) >= lo && at(k) <= hi; };
  const unsigned c = at(0);
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf) return cont(1) ? 2 : 0;
  if (c == 0xe0) return cont(1, 0xa0) && cont(2) ? 3 : 0;
  if (c == 0xed) return cont(1, 0x80, 0x9f) && cont(2) ? 3 : 0;
  if (c == 0xef && at(1) == 0xbf && (at(2) == 0xbe || at(2) == 0xbf)) return 0;  // U+FFFE, U+FFFF
  if ((c >= 0xe1 && c <= 0xec) || c == 0xee || c == 0xef) return cont(1) && cont(2) ? 3 : 0;
  if (c == 0xf0) return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
  if (c >= 0xf1 && c <= 0xf3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
  if (c == 0xf4) return cont(1, 0x80, 0x8f) && cont(2) && cont(3) ? 4 : 0;
  return 0;
}

// Text as XML character data or an attribute value: & < > " as entities, control bytes (which
// XML 1.0 cannot hold, even as references) as the visible text \xNN the CLI prints them as, and
// a byte that begins no allowed UTF-8 character as U+FFFD. Always well-formed.
inline std::string escape(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    const auto c = static_cast<unsigned char>(ch);
    if (c >= 0x80) {
      const std::size_t n = xml_utf8_sequence(text, i);
      if (n == 0) {
        out += "\xef\xbf\xbd";  // U+FFFD REPLACEMENT CHARACTER
      } else {
        out.append(text.substr(i, n));
        i += n - 1;
      }
      continue;
    }
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          out += "\\x";
          out += kHex[c >> 4];
          out += kHex[c & 15];
        } else {
          out += ch;
        }
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
  if (bytes >= (1ull << 30)) std::snprintf(text, sizeof text, "%.2f GiB", static_cast<double>(bytes) / (1ull << 30));
  else std::snprintf(text, sizeof text, "%.1f MiB", to_mib(bytes));
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
      {"allocate", "#f6c28b"}, {"import", "#f3e08a"}, {"read", "#a8d5f2"}, {"upload", "#b8e0a8"},
      {"finish", "#cfe8c4"},   {"verify", "#d4b8ec"}, {"copy", "#f4a9a0"}, {"release", "#e0e0e0"}};
  for (const auto& [phase, colour] : kColours)
    if (name == phase) return colour;
  return "#dddddd";
}

// Long model paths and device names must not run off the picture. The cut backs up to the start
// of a UTF-8 sequence, so no character is split.
inline std::string clip(std::string text, std::size_t max) {
  if (text.size() <= max) return text;
  std::size_t cut = max - 3;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xc0) == 0x80) --cut;
  return text.substr(0, cut) + "...";
}

}  // namespace lwload::profile::svg
