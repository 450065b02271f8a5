// Parsing load options from text (CLI arguments, C API key/value pairs).
#include "loading/option_text.hpp"

#include <array>
#include <charconv>
#include <cmath>

#include "lwload/error.hpp"

namespace lwload {
namespace {

constexpr std::array<std::string_view, 8> kNames = {"placement", "budget",    "slots", "only",
                                                    "io",        "direct-io", "lazy",  "io-threads"};

std::uint64_t parse_count(std::string_view text, std::string_view name, std::uint64_t low, std::uint64_t high) {
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || value < low || value > high)
    fail(ErrorCode::usage, name, ": '", text, "' is not a whole number between ", low, " and ", high);
  return value;
}

}  // namespace

bool parse_switch(std::string_view text, std::string_view what) {
  if (text == "1" || text == "true" || text == "yes") return true;
  if (text == "0" || text == "false" || text == "no") return false;
  fail(ErrorCode::usage, what, ": '", text, "' is not a switch (true/false, yes/no, 1/0)");
}

std::uint64_t parse_size(std::string_view text, std::string_view what) {
  double number = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
  const std::string_view suffix(end, static_cast<std::size_t>(text.data() + text.size() - end));
  double scale = 0;
  if (suffix.empty() || suffix == "B") scale = 1;
  else if (suffix == "KiB" || suffix == "K") scale = 1024.0;
  else if (suffix == "MiB" || suffix == "M") scale = 1024.0 * 1024;
  else if (suffix == "GiB" || suffix == "G") scale = 1024.0 * 1024 * 1024;
  if (ec != std::errc{} || scale == 0 || number < 0 || !std::isfinite(number) || number * scale > 1.8e19)
    fail(ErrorCode::usage, what, ": '", text, "' is not a size (bytes, or a number with KiB/MiB/GiB)");
  return static_cast<std::uint64_t>(std::llround(number * scale));
}

std::vector<std::string> split_names(std::string_view comma_separated) {
  std::vector<std::string> names;
  while (!comma_separated.empty()) {
    const std::size_t comma = comma_separated.find(',');
    const std::string_view name = comma_separated.substr(0, comma);
    if (!name.empty()) names.emplace_back(name);
    if (comma == std::string_view::npos) break;
    comma_separated.remove_prefix(comma + 1);
  }
  return names;
}

void set_load_option(LoadOptions& options, std::string_view name, std::string_view value) {
  if (name.starts_with("--")) name.remove_prefix(2);
  const std::string option = str("--", name);  // errors name it as the CLI does
  if (name == "placement") {
    options.plan.force = parse_placement(value);
  } else if (name == "budget") {
    options.plan.staging_budget = parse_size(value, option);
  } else if (name == "slots") {
    options.plan.staging_slots = static_cast<std::uint32_t>(parse_count(value, option, 1, 1024));
  } else if (name == "only") {
    options.plan.only = split_names(value);
  } else if (name == "io") {
    options.plan.io = parse_io_engine(value);
  } else if (name == "direct-io") {
    options.plan.direct_io = parse_switch(value, option);
  } else if (name == "lazy") {
    options.lazy = parse_switch(value, option);
  } else if (name == "io-threads") {
    options.plan.io_threads = static_cast<std::uint32_t>(parse_count(value, option, 0, 64));
  } else {
    std::string known;
    for (std::string_view n : kNames) known += str(known.empty() ? "" : ", ", n);
    fail(ErrorCode::usage, "unknown load option '", name, "' (known: ", known, ")");
  }
}

std::span<const std::string_view> load_option_names() noexcept { return kNames; }

void set_open_option(OpenOptions& options, std::string_view name, std::string_view value) {
  if (name.starts_with("--")) name.remove_prefix(2);
  const std::string option = str("--", name);
  if (name == "allow-outside-links") {
    options.allow_outside_links = parse_switch(value, option);
  } else if (name == "densify") {
    options.densify = parse_switch(value, option);
  } else if (name == "format") {
    options.format = std::string(value);
  } else if (name == "max-tensors") {
    options.max_tensors = parse_count(value, option, 1, std::uint64_t{1} << 40);
  } else if (name == "max-name-bytes") {
    options.max_name_bytes = parse_size(value, option);
  } else {
    fail(ErrorCode::usage, "unknown open option '", name, "' (known: allow-outside-links, densify, format, ",
         "max-tensors, ", "max-name-bytes)");
  }
}

}  // namespace lwload
