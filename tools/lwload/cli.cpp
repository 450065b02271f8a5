#include "cli.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <iostream>
#include <sstream>

#include "core/json_text.hpp"
#include "lwload/error.hpp"

namespace lwload::cli {

Args::Args(std::string command, std::string summary, std::vector<std::string> positional_names,
           std::vector<OptionSpec> options)
    : command_(std::move(command)),
      summary_(std::move(summary)),
      positional_names_(std::move(positional_names)),
      options_(std::move(options)) {}

const OptionSpec* Args::spec(std::string_view name) const {
  for (const auto& o : options_)
    if (o.name == name) return &o;
  return nullptr;
}

bool Args::parse(int argc, char** argv) {
  for (int i = 0; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::cout << help();
      return false;
    }
    for (const auto& o : options_)
      if (!o.short_name.empty() && arg == o.short_name) arg = o.name;
    if (arg.starts_with("--")) {
      std::string name(arg);
      std::optional<std::string> inline_value;
      if (const auto eq = name.find('='); eq != std::string::npos) {
        inline_value = name.substr(eq + 1);
        name.resize(eq);
      }
      const OptionSpec* s = spec(name);
      if (!s) fail(ErrorCode::usage, "lwload ", command_, ": unknown option '", name, "' (see --help)");
      if (s->value_name.empty()) {
        // Stored as the one spelling set_load_option and set_open_option read back.
        const bool on = !inline_value || parse_switch(*inline_value, str("lwload ", command_, ": ", name));
        values_[name] = on ? "true" : "false";
      } else if (inline_value) {
        values_[name] = *inline_value;
      } else {
        if (i + 1 >= argc) fail(ErrorCode::usage, "lwload ", command_, ": option ", name, " needs a value");
        values_[name] = argv[++i];
      }
      continue;
    }
    positional_.emplace_back(arg);
  }
  if (positional_.size() != positional_names_.size())
    fail(ErrorCode::usage, "lwload ", command_, ": expected ", positional_names_.size(), " argument(s), got ",
         positional_.size(), " (see --help)");
  return true;
}

std::vector<std::string> Args::given_options(const std::vector<std::string_view>& except) const {
  std::vector<std::string> out;
  for (const auto& [name, value] : values_) {
    if (std::find(except.begin(), except.end(), name) != except.end()) continue;
    const OptionSpec* s = spec(name);
    const bool is_flag = s && s->value_name.empty();
    if (is_flag && value != "true") continue;
    out.push_back(name);
    if (!is_flag) out.push_back(value);
  }
  return out;
}

const std::string& Args::positional(std::size_t i) const { return positional_.at(i); }

bool Args::flag(std::string_view name) const {
  const auto it = values_.find(name);
  return it != values_.end() && it->second == "true";
}

std::optional<std::string> Args::get_optional(std::string_view name) const {
  if (const auto it = values_.find(name); it != values_.end()) return it->second;
  if (const OptionSpec* s = spec(name); s && !s->default_value.empty()) return s->default_value;
  return std::nullopt;
}

std::string Args::get(std::string_view name) const { return get_optional(name).value_or(""); }

std::uint64_t Args::get_size(std::string_view name) const { return parse_size(get(name), name); }

std::uint64_t Args::get_uint(std::string_view name) const {
  const std::string text = get(name);
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size())
    fail(ErrorCode::usage, "option ", name, ": '", text, "' is not a whole number");
  return value;
}

std::string Args::help() const {
  std::ostringstream out;
  out << "usage: lwload " << command_;
  for (const auto& p : positional_names_) out << ' ' << p;
  if (!options_.empty()) out << " [options]";
  out << "\n\n" << summary_ << "\n";
  if (!options_.empty()) out << "\noptions:\n";
  for (const auto& o : options_) {
    std::string left = "  " + (o.short_name.empty() ? "" : o.short_name + ", ") + o.name +
                       (o.value_name.empty() ? "[=B]" : " " + o.value_name);
    if (left.size() < 28) left.resize(28, ' ');
    out << left << ' ' << o.help;
    if (!o.default_value.empty()) out << " (default: " << o.default_value << ")";
    out << '\n';
  }
  out << "  --help                     this text\n";
  if (std::any_of(options_.begin(), options_.end(), [](const OptionSpec& o) { return o.value_name.empty(); }))
    out << "\n[=B]: a flag; --flag turns it on, --flag=B sets it (B: true/false, yes/no, 1/0)\n";
  out << '\n' << kExitCodesHelp;
  return out.str();
}

std::string format_bytes(std::uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(unit == 0 ? 0 : 2);
  out << value << ' ' << kUnits[unit];
  return out.str();
}

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  const auto escape = [&](unsigned char c) {
    static constexpr char kHex[] = "0123456789abcdef";
    out += "\\x";
    out += kHex[c >> 4];
    out += kHex[c & 15];
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    const auto next = i + 1 < text.size() ? static_cast<unsigned char>(text[i + 1]) : 0;
    if (c < 0x20 || c == 0x7f) {
      escape(c);
    } else if (c == 0xc2 && next >= 0x80 && next <= 0x9f) {  // U+0080..U+009F in UTF-8 (C1, e.g. CSI)
      escape(c);
      escape(next);
      ++i;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

std::string valid_utf8_json(std::string_view json) {
  std::string out;
  out.reserve(json.size());
  for (std::size_t i = 0; i < json.size();) {
    const std::size_t n = json_text::utf8_sequence(json, i);
    if (n == 0) {
      out += "\\ufffd";
      ++i;
    } else {
      out.append(json.substr(i, n));
      i += n;
    }
  }
  return out;
}

int report_error(const std::exception& error) {
  std::cerr << "lwload: error: " << printable(error.what()) << '\n';
  const auto* e = dynamic_cast<const Error*>(&error);
  if (!e) return exit_failure;
  switch (e->code()) {
    case ErrorCode::usage: return exit_usage;
    case ErrorCode::bad_input: return exit_bad_input;
    case ErrorCode::io: return exit_io;
    case ErrorCode::unsupported: return exit_unsupported;
    case ErrorCode::device:
    case ErrorCode::out_of_memory:
    case ErrorCode::does_not_fit:
    case ErrorCode::cancelled: return exit_failure;
  }
  return exit_failure;
}

}  // namespace lwload::cli
