// lwload: inspect models, list devices, plan and run loads, and profile their memory.
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
    {"plan", lwload::cli::cmd_plan, "per-tensor placement and predicted memory for a device"},
    {"load", lwload::cli::cmd_load, "load a model onto a device (--verify reads it back)"},
    {"profile", lwload::cli::cmd_profile, "load while sampling memory; report peak, timeline, SVG"},
    {"bench", lwload::cli::cmd_bench, "lwload vs a naive loader vs plain pread, side by side"},
    {"synth", lwload::cli::cmd_synth, "write a synthetic model with verifiable contents"},
};

int usage(std::ostream& out) {
  out << "usage: lwload COMMAND [args] [--help]\n       lwload --version\n\ncommands:\n";
  for (const auto& c : kCommands) {
    std::string name(c.name);
    name.resize(10, ' ');
    out << "  " << name << c.summary << '\n';
  }
  return lwload::cli::exit_usage;
}

}  // namespace

int main(int argc, char** argv) {
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
      return c.run(argc - 2, argv + 2);
    } catch (const std::exception& e) {
      return lwload::cli::report_error(e);
    }
  }
  std::cerr << "lwload: unknown command '" << name << "'\n";
  return usage(std::cerr);
}
