// lwload profile: loads a model while sampling this process's memory, prints baseline, peak,
// growth and the memory contract's bound with HELD / VIOLATED (exit 1 when violated), and writes
// the timeline as JSON, CSV and SVG on request.
#include <fstream>
#include <iostream>

#include "cli.hpp"
#include "load_options.hpp"
#include "lwload/backend.hpp"
#include "lwload/error.hpp"
#include "lwload/profile.hpp"

namespace lwload::cli {
namespace {

void write_text(const std::string& path, const std::string& text, const char* what) {
  if (path == "-") {
    std::cout << text;
    return;
  }
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) fail(ErrorCode::io, path, ": cannot write the ", what);
  std::cerr << "wrote " << what << " to " << path << '\n';
}

}  // namespace

int cmd_profile(int argc, char** argv) {
  Args args("profile",
            "Load a model while sampling memory (RSS split into anonymous / file-backed / shared),\n"
            "and check the memory contract: unified peak <= baseline + model + largest tensor\n"
            "(zero-copy: anonymous growth <= 16 MiB); discrete peak <= baseline + budget + 16 MiB.\n"
            "Exit status 1 when the contract is violated.",
            {"MODEL"},
            {device_option(), links_option(), placement_option(), budget_option(), slots_option(), memory_option(),
             max_alloc_option(), io_option(), direct_io_option(), lazy_option(),
             {"--verify", "", "read every tensor back and compare (a verify phase)", ""},
             {"--period", "MS", "sampling period in milliseconds", "2"},
             {"--json", "FILE", "write the report and timeline as JSON ('-' = stdout)", ""},
             {"--csv", "FILE", "write the samples as CSV ('-' = stdout)", ""},
             {"--svg", "FILE", "write the timeline as SVG", ""}});
  if (!args.parse(argc, argv)) return exit_ok;

  const DeviceOverrides overrides = device_overrides(args);
  profile::ProfileOptions options;
  options.load.plan = plan_options(args);
  apply_io_options(args, options.load);
  options.verify = args.flag("--verify");
  const std::uint64_t period_ms = args.get_uint("--period");
  if (period_ms == 0 || period_ms > 1000) fail(ErrorCode::usage, "--period: ", period_ms, " is not 1..1000 ms");
  options.period = std::chrono::milliseconds(period_ms);

  // Headers first, then the device: the baseline is the process after device initialisation.
  const Manifest manifest = open_model(args);
  const auto device = open_device(args.get("--device"), overrides);
  profile::Report report = profile::profile_load(manifest, *device, options);
  report.model = args.positional(0);

  const bool json_to_stdout = args.get("--json") == "-";
  write_summary(json_to_stdout ? std::cerr : std::cout, report);
  if (const auto path = args.get_optional("--json")) write_text(*path, profile::report_to_json(report) + "\n", "JSON report");
  if (const auto path = args.get_optional("--csv")) write_text(*path, profile::report_to_csv(report), "CSV samples");
  if (const auto path = args.get_optional("--svg")) write_text(*path, profile::report_to_svg(report), "SVG timeline");
  return report.contract.held ? exit_ok : exit_failure;
}

}  // namespace lwload::cli
