// The lwload tool's small shared vocabulary: an argument parser with per-command help, size
// parsing (plain bytes or KiB/MiB/GiB), and the exit codes the README and `lwload --help` document.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "loading/option_text.hpp"

namespace lwload::cli {

// One code per kind of failure a caller (a script, CI) may want to tell apart; report_error maps
// each ErrorCode to one of them. ErrorCode::cancelled has no code of its own: the CLI never cancels
// a load (Ctrl-C ends the process with the signal), so it counts as a load failure.
enum ExitCode : int {
  exit_ok = 0,
  exit_failure = 1,      // load or device failure: device, out_of_memory, does_not_fit, anything else
  exit_usage = 2,        // bad usage: unknown option, bad value, unknown device
  exit_bad_input = 3,    // bad input file: malformed, truncated or inconsistent model
  exit_io = 4,           // I/O error: the OS refused an open, read, map or write (missing file, EIO, disk full)
  exit_unsupported = 5,  // valid input lwload cannot handle (yet)
  exit_contract = 6,     // `lwload profile`: the memory contract was violated
};

// The table above as text, for `lwload --help` (the README's "Exit codes:" line says the same).
inline constexpr const char* kExitCodesHelp =
    "exit codes: 0 ok, 1 load or device failure, 2 bad usage, 3 bad input file, 4 I/O error,\n"
    "            5 unsupported model feature, 6 memory contract violated (profile)\n";

struct OptionSpec {
  std::string name;        // "--device"
  std::string value_name;  // "D"; empty for a flag
  std::string help;
  std::string default_value;
  std::string short_name = {};  // "-o": another spelling of `name`, for the conventional ones
};

class Args {
 public:
  Args(std::string command, std::string summary, std::vector<std::string> positional_names,
       std::vector<OptionSpec> options);

  // Parses argv after the subcommand. Returns false after printing help (--help) and throws
  // Error(usage) on unknown options or missing values. A flag (an option without a value name) is
  // given as --flag or --flag=VALUE, VALUE spelled as parse_switch accepts (true/false, yes/no,
  // 1/0); anything else is a usage error naming the flag and the value.
  bool parse(int argc, char** argv);

  const std::string& positional(std::size_t i) const;
  std::size_t positional_count() const { return positional_.size(); }
  bool flag(std::string_view name) const;        // given and not =false
  std::string get(std::string_view name) const;  // value, or the declared default
  std::optional<std::string> get_optional(std::string_view name) const;
  std::uint64_t get_size(std::string_view name) const;
  std::uint64_t get_uint(std::string_view name) const;
  std::string help() const;
  // The options given on the command line, but those in `except`, as arguments again: what a
  // command passes on to a child lwload (flags given =false are left out: off is their default).
  std::vector<std::string> given_options(const std::vector<std::string_view>& except) const;

 private:
  const OptionSpec* spec(std::string_view name) const;

  std::string command_;
  std::string summary_;
  std::vector<std::string> positional_names_;
  std::vector<OptionSpec> options_;
  std::vector<std::string> positional_;
  std::map<std::string, std::string, std::less<>> values_;
};

using lwload::parse_size;                       // "64MiB", "2GiB", "4096" → bytes (load/option_text.hpp)
std::string format_bytes(std::uint64_t bytes);  // "2.00 GiB"

// `text` with terminal control characters (C0, DEL, C1) written as \xNN, so a tensor name or an
// error message from a hostile file cannot move the cursor or retitle the terminal.
// File names are printed through it too (a model folder's names are a stranger's as well).
std::string printable(std::string_view text);
// JSON text made valid UTF-8 whatever the names in it hold: each byte that does not begin a
// well-formed UTF-8 sequence (stray continuation bytes, overlong forms, surrogates, code points past
// U+10FFFF, truncated sequences) becomes the escape \ufffd (U+FFFD REPLACEMENT CHARACTER). Such bytes
// can only sit inside JSON strings (the rest of JSON text is ASCII), so the text stays valid JSON.
std::string valid_utf8_json(std::string_view json);
// Maps an lwload::Error (or any exception) to an exit code after printing it (printable) to stderr.
int report_error(const std::exception& error);

// The subcommands; each file cmd_<name>.cpp defines one.
int cmd_inspect(int argc, char** argv);
int cmd_devices(int argc, char** argv);
int cmd_doctor(int argc, char** argv);
int cmd_plan(int argc, char** argv);
int cmd_load(int argc, char** argv);
int cmd_profile(int argc, char** argv);
int cmd_bench(int argc, char** argv);
int cmd_synth(int argc, char** argv);
int cmd_strip(int argc, char** argv);

}  // namespace lwload::cli
