// lwload load: loads a model onto a device and reports the time, throughput, placements and read
// engine used; --verify reads every tensor back and compares it with the file.
#include <unistd.h>

#include <boost/json.hpp>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <thread>

#include "cli.hpp"
#include "load_options.hpp"
#include "lwload/backend.hpp"
#include "lwload/error.hpp"
#include "lwload/loader.hpp"

namespace lwload::cli {
namespace {

// "\r  loading  42% ..." on stderr, only when it is a terminal, at most once per percent.
std::function<void(std::uint64_t, std::uint64_t)> progress_printer() {
  if (!::isatty(STDERR_FILENO)) return {};
  return [last = -1](std::uint64_t done, std::uint64_t total) mutable {
    const int percent = total ? static_cast<int>(done * 100 / total) : 100;
    if (percent == last) return;
    last = percent;
    std::cerr << "\r  loading " << std::setw(3) << percent << "%  " << format_bytes(done) << " of "
              << format_bytes(total) << (done == total ? "\n" : "") << std::flush;
  };
}

// How the resident bytes are known (LoadStats::resident_count), as --json says it.
std::string_view resident_count_name(ResidentCount how) {
  switch (how) {
    case ResidentCount::counted: return "counted";
    case ResidentCount::populated: return "populated";
    case ResidentCount::sampled: return "sampled";
  }
  return "?";
}

}  // namespace

int cmd_load(int argc, char** argv) {
  Args args("load", "Loads a model onto a device; --verify compares every tensor on the device with the file.",
            {"MODEL"},
            {device_option(),
             links_option(),
             densify_option(),
             range_option(),
             placement_option(),
             budget_option(),
             slots_option(),
             memory_option(),
             max_alloc_option(),
             direct_io_option(),
             io_option(),
             lazy_option(),
             only_option("load"),
             {"--verify", "", "read every tensor back from the device and compare it with the file", ""},
             {"--verbose", "", "per-tensor placement, mechanism and offset; read engine details", ""},
             {"--hold", "SECONDS",
              "keep the weights loaded this long before exiting (to measure page sharing "
              "with another process)",
              "0"},
             {"--json", "", "print one JSON object", ""}});
  if (!args.parse(argc, argv)) return exit_ok;
  const DeviceOverrides overrides = device_overrides(args);
  LoadOptions options;
  options.plan = plan_options(args);
  apply_io_options(args, options);
  const bool json = args.flag("--json"), verbose = args.flag("--verbose");
  if (!json) options.on_progress = progress_printer();

  Manifest manifest = open_model(args);
  const auto device = open_device(args.get("--device"), overrides);
  const Weights weights = load(std::move(manifest), *device, options);  // moved: no second copy
  const Plan& plan = weights.plan();
  const LoadStats& stats = weights.stats();
  warn_unhonoured_placement(options.plan, plan, weights.manifest());
  const double throughput = stats.seconds > 0 ? static_cast<double>(plan.model_bytes) / stats.seconds : 0;

  if (const std::uint64_t hold = args.get_uint("--hold"); hold > 0) {
    std::cerr << "holding the weights for " << hold << " s\n";
    std::this_thread::sleep_for(std::chrono::seconds(hold));
  }

  std::optional<VerifyReport> verified;
  std::string not_verifiable;
  if (args.flag("--verify")) {
    try {
      verified = verify(weights);
    } catch (const Error& e) {
      if (e.code() != ErrorCode::unsupported) throw;
      not_verifiable = e.what();
    }
  }

  if (json) {
    boost::json::object out{
        {"device", weights.device().id()},
        {"tensors", weights.tensors().size()},
        {"loaded", plan.tensors.size() - plan.count(Placement::skipped)},
        {"model_bytes", plan.model_bytes},
        {"seconds", stats.seconds},
        {"allocate_seconds", stats.allocate_seconds},
        {"bytes_per_second", throughput},
        {"populate_seconds", stats.populate_seconds},
        {"zero_copy_bytes", stats.zero_copy_bytes},
        {"resident_bytes", stats.resident_bytes},
        {"resident_count", resident_count_name(stats.resident_count)},
        // What ran, as the executed plan records it (a mechanism refused at load re-planned with the reason).
        {"io_engine", io_engine_name(plan.schedule.engine)},
        {"io_note", plan.schedule.engine_reason},
        {"direct_io", plan.direct_io},
        {"direct_io_note", plan.direct_io_reason},
        {"direct_io_bytes", weights.io().direct_io_bytes},
        {"buffered_bytes", weights.io().buffered_bytes},
        {"bytes_read", stats.bytes_read},
        {"reads", stats.reads},
        {"uploads", stats.uploads}};
    boost::json::object counts;
    for (Placement p : {Placement::zero_copy, Placement::direct, Placement::staged, Placement::skipped})
      counts[placement_name(p)] = plan.count(p);
    out["placements"] = std::move(counts);
    out["plan"] = boost::json::parse(plan_to_json(plan, weights.manifest()));
    if (verified)
      out["verify"] =
          boost::json::object{{"verified", true}, {"tensors", verified->tensors}, {"bytes", verified->bytes}};
    else if (!not_verifiable.empty())
      out["verify"] = boost::json::object{{"verified", false}, {"reason", not_verifiable}};
    else out["verify"] = nullptr;
    std::cout << valid_utf8_json(boost::json::serialize(out)) << '\n';
    return exit_ok;
  }

  if (verbose) {
    for (const TensorHandle& h : weights.tensors()) {
      const TensorPlan& tp = plan.tensors[h.index];
      if (!tp.selected) continue;
      std::cout << "  " << printable(h.info->name) << ": " << placement_name(h.placement);
      if (h.buffer)
        std::cout << " via " << h.mechanism << " (" << native_type_name(h.native.type) << ") at offset " << h.offset;
      std::cout << ", " << h.bytes << " bytes — " << tp.reason << '\n';
    }
  }
  std::cout << "loaded " << plan.model_bytes << " bytes (" << format_bytes(plan.model_bytes) << ") in "
            << plan.tensors.size() - plan.count(Placement::skipped) << " tensors onto " << weights.device().id()
            << " in " << std::fixed << std::setprecision(3) << stats.seconds * 1000 << " ms (" << std::setprecision(2)
            << throughput / (1 << 30) << " GiB/s)\n";
  std::cout << "placements: zero_copy " << plan.count(Placement::zero_copy) << ", direct "
            << plan.count(Placement::direct) << ", staged " << plan.count(Placement::staged) << ", skipped "
            << plan.count(Placement::skipped) << '\n';
  if (plan.count(Placement::direct) + plan.count(Placement::staged) > 0) {
    // What ran, from the executed plan; why O_DIRECT was not used is said whenever it was asked for.
    std::cout << "io engine: " << io_engine_name(plan.schedule.engine) << (plan.direct_io ? " (O_DIRECT)" : "");
    if (verbose && !plan.schedule.engine_reason.empty()) std::cout << " — " << plan.schedule.engine_reason;
    if (verbose || (plan.options.direct_io == true && !plan.direct_io)) std::cout << " — " << plan.direct_io_reason;
    std::cout << '\n';
  }
  if (stats.zero_copy_bytes > 0)
    std::cout << "zero_copy: " << (stats.resident_count == ResidentCount::sampled ? "~" : "")
              << format_bytes(stats.resident_bytes) << " of " << format_bytes(stats.zero_copy_bytes) << " resident"
              << (options.lazy ? " (lazy: pages fault in on first use)"
                               : str(", populated in ", stats.populate_seconds * 1000, " ms"))
              << '\n';
  if (verbose)
    std::cout << "reads " << stats.reads << " (" << stats.bytes_read << " bytes), uploads " << stats.uploads
              << ", allocations and imports " << std::setprecision(3) << stats.allocate_seconds * 1000 << " ms\n";
  if (verified)
    std::cout << "verify: ok, " << verified->tensors << " tensors (" << format_bytes(verified->bytes)
              << ") match the file\n";
  else if (!not_verifiable.empty()) std::cout << "verify: " << not_verifiable << '\n';
  return exit_ok;
}

}  // namespace lwload::cli
