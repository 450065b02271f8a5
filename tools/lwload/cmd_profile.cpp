// lwload profile: loads a model while sampling this process's memory, prints baseline, peak,
// growth and the memory contract's bound with HELD / VIOLATED (exit 6, exit_contract, when violated), and writes
// the timeline as JSON, CSV and SVG on request. --loader naive|ggml profiles a baseline instead;
// --compare runs several loaders, each in its own child process, into one summary and SVG.
#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "cli.hpp"
#include "load_options.hpp"
#include "lwload/backend.hpp"
#include "lwload/error.hpp"
#include "lwload/profile.hpp"
#include "profile_compare.hpp"
#include "profile_ggml.hpp"
#include "profile_ort.hpp"
#include "profile_naive.hpp"

namespace lwload::cli {
namespace {

void write_text(const std::string& path, const std::string& text, const char* what) {
  if (path == "-") {
    std::cout << text;
    return;
  }
  // A file is written under a temporary name and renamed once complete, so a full disk never
  // leaves a truncated SVG or JSON behind; a device or pipe (/dev/stdout) is written as it is.
  std::error_code ec;
  const bool special = std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec);
  const std::string target = special ? path : path + ".partial";
  std::ofstream out(target, std::ios::binary);
  out << text;
  out.close();
  if (!out) {
    if (!special) std::filesystem::remove(target, ec);
    fail(ErrorCode::io, path, ": cannot write the ", what);
  }
  if (!special) {
    std::filesystem::rename(target, path, ec);
    if (ec) fail(ErrorCode::io, path, ": cannot write the ", what, " (rename: ", ec.message(), ")");
  }
  std::cerr << "wrote " << what << " to " << printable(path) << '\n';
}

// --compare: the loaders named, then lwload as asked (--placement, default auto), each in its own
// process; the summary and SVG put them side by side. The exit status is lwload's verdict.
int profile_comparison(const Args& args, const std::string& compare) {
  std::vector<std::string> loaders = parse_compare_list(compare);
  loaders.push_back(args.get("--placement"));
  if (args.get_optional("--csv")) fail(ErrorCode::usage, "--csv is one loader's samples: use --json with --compare");
  if (args.get("--loader") != "lwload") fail(ErrorCode::usage, "--loader and --compare do not go together");
  const auto forwarded = args.given_options({"--compare", "--svg", "--json", "--csv", "--placement"});
  const Comparison result = run_comparison(args.positional(0), loaders, forwarded);

  const bool json_to_stdout = args.get("--json") == "-";
  profile::write_comparison_summary(json_to_stdout ? std::cerr : std::cout, result.series);
  if (const auto path = args.get_optional("--json")) {
    boost::json::array series;
    for (std::size_t i = 0; i < result.series.size(); ++i)
      series.push_back({{"label", result.series[i].label}, {"report", boost::json::parse(result.reports_json[i])}});
    const boost::json::object out{{"model", args.positional(0)}, {"series", std::move(series)}};
    write_text(*path, valid_utf8_json(boost::json::serialize(out)) + "\n", "comparison JSON");
  }
  if (const auto path = args.get_optional("--svg"))
    write_text(*path, profile::comparison_to_svg(result.series), "comparison SVG");
  return result.series.back().report.contract.held ? exit_ok : exit_contract;
}

}  // namespace

int cmd_profile(int argc, char** argv) {
  Args args("profile",
            "Load a model while sampling memory (RSS split into anonymous / file-backed / shared),\n"
            "and check the memory contract: unified peak <= baseline + model + largest tensor\n"
            "(zero-copy: anonymous growth <= 16 MiB); discrete peak <= baseline + budget + 16 MiB.\n"
            "Exit status 6 when the contract is violated.",
            {"MODEL"},
            {device_option(),
             links_option(),
             densify_option(),
             placement_option(),
             budget_option(),
             slots_option(),
             memory_option(),
             max_alloc_option(),
             io_option(),
             direct_io_option(),
             lazy_option(),
             {"--verify", "", "read every tensor back and compare (a verify phase)", ""},
             {"--period", "MS", "sampling period in milliseconds", "2"},
             {"--json", "FILE", "write the report and timeline as JSON ('-' = stdout)", ""},
             {"--csv", "FILE", "write the samples as CSV ('-' = stdout)", ""},
             {"--svg", "FILE", "write the timeline as SVG", ""},
             {"--compare", "LOADERS",
              "also profile these loaders, each in its own process, and draw all in one SVG: naive "
              "(read the file, copy each tensor), ggml (ggml's own loading), ort (ONNX Runtime's own loading) and/or "
              "placements "
              "(zero-copy, direct, staged, auto), "
              "comma-separated",
              ""},
             {"--loader", "L",
              "lwload, naive, ggml (ggml's own loading of a GGUF, on ggml's Vulkan device for --device "
              "vulkan[:N], else its CPU; built with ggml) or ort (ONNX Runtime's own CreateSession of an ONNX "
              "model on its CPU; built with ONNX Runtime): the baselines --compare runs",
              "lwload"}});
  if (!args.parse(argc, argv)) return exit_ok;
  if (const auto compare = args.get_optional("--compare")) return profile_comparison(args, *compare);

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
  const std::string loader = args.get("--loader");
  if (loader != "lwload" && !is_baseline_loader(loader))
    fail(ErrorCode::usage, "--loader: '", loader, "' is not lwload, naive, ggml or ort");
  profile::Report report;
  if (loader == "naive") {
    report = profile_naive(manifest, options.period);  // host memory: no device to open
  } else if (loader == "ggml") {
    report = profile_ggml(args.positional(0), manifest, args.get("--device"), options.period);
  } else if (loader == "ort") {
    report = profile_ort(args.positional(0), manifest, options.period);
  } else {
    const auto device = open_device(args.get("--device"), overrides);
    report = profile::profile_load(manifest, *device, options);
  }
  report.model = args.positional(0);

  const bool json_to_stdout = args.get("--json") == "-";
  write_summary(json_to_stdout ? std::cerr : std::cout, report);
  if (const auto path = args.get_optional("--json"))
    write_text(*path, valid_utf8_json(profile::report_to_json(report)) + "\n", "JSON report");
  if (const auto path = args.get_optional("--csv")) write_text(*path, profile::report_to_csv(report), "CSV samples");
  if (const auto path = args.get_optional("--svg")) write_text(*path, profile::report_to_svg(report), "SVG timeline");
  return report.contract.held ? exit_ok : exit_contract;
}

}  // namespace lwload::cli
