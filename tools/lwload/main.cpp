// lwload: inspect models, list devices, plan and run loads, and profile their memory.
#include <sys/resource.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <string_view>

#include "cli.hpp"
#include "lwload/version.hpp"

namespace {

struct Command {
  std::string_view name;
  int (*run)(int, char**);
  std::string_view summary;
};

constexpr Command kCommands[] = {
    {"inspect", lwload::cli::cmd_inspect, "tensors, dtypes, shapes and byte extents of a model"},
    {"devices", lwload::cli::cmd_devices, "devices of every backend and what they can do"},
    {"doctor", lwload::cli::cmd_doctor, "kernel features found and the fallbacks in force"},
    {"plan", lwload::cli::cmd_plan, "per-tensor placement and predicted memory for a device"},
    {"load", lwload::cli::cmd_load, "load a model onto a device (--verify reads it back)"},
    {"profile", lwload::cli::cmd_profile, "load while sampling memory; report peak, timeline, SVG"},
    {"bench", lwload::cli::cmd_bench, "lwload vs a naive loader vs plain pread, side by side"},
    {"synth", lwload::cli::cmd_synth, "write a synthetic model with verifiable contents"},
    {"strip", lwload::cli::cmd_strip, "write an ONNX model's graph without its weights' bytes"},
};

int usage(std::ostream& out) {
  out << "usage: lwload COMMAND [args] [--help]\n       lwload --version\n\ncommands:\n";
  for (const auto& c : kCommands) {
    std::string name(c.name);
    name.resize(10, ' ');
    out << "  " << name << c.summary << '\n';
  }
  out << '\n' << lwload::cli::kExitCodesHelp;
  return lwload::cli::exit_usage;
}

// Standard output that could not be written (a full disk, a closed pipe's reader gone) is an I/O
// error, not success: a script reading `lwload inspect --json > out.json` must not get a truncated
// file and exit 0.
int finish(int status) {
  std::cout.flush();
  if (std::cout) return status;
  std::cerr << "lwload: error: cannot write standard output: " << std::strerror(errno) << '\n';
  return status == lwload::cli::exit_ok ? lwload::cli::exit_io : status;
}

// A model in thousands of files (TFJS shards at 4 MB each) must not fail on Debian's default soft
// limit of 1,024 descriptors when the hard limit allows more; the tool, not the library, owns the
// process's limits.
void raise_open_file_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= limit.rlim_max) return;
  limit.rlim_cur = limit.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &limit);
}

}  // namespace

int main(int argc, char** argv) {
  raise_open_file_limit();
  if (argc < 2) return usage(std::cerr);
  const std::string_view name = argv[1];
  if (name == "--version") {
    std::cout << "lwload " << lwload::version() << '\n';
    return lwload::cli::exit_ok;
  }
  if (name == "--help" || name == "-h" || name == "help") {
    usage(std::cout);
    return lwload::cli::exit_ok;
  }
  for (const auto& c : kCommands) {
    if (c.name != name) continue;
    try {
      return finish(c.run(argc - 2, argv + 2));
    } catch (const std::exception& e) {
      return finish(lwload::cli::report_error(e));
    }
  }
  std::cerr << "lwload: unknown command '" << name << "'\n";
  return usage(std::cerr);
}
