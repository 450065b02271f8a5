// lwload bench: in one run, side by side, the median of several repetitions of
//   - the naive loader (whole file into memory, then a copy per tensor),
//   - sequential pread of the file (the page-cache limit) and O_DIRECT reads (the disk limit),
//   - lwload::load with each applicable placement on the chosen device;
// each with its time, throughput, peak RSS growth over its own baseline, and ratios against the
// naive loader and the read limits. Variants run interleaved, one repetition of each in turn, so
// drift of the machine affects them alike.
#include <algorithm>
#include <boost/json.hpp>
#include <cstdio>
#include <functional>
#include <iostream>
#include <optional>
#include <sstream>

#include "bench_baselines.hpp"
#include "bench_cache.hpp"
#include "cli.hpp"
#include "load_options.hpp"
#include "lwload/backend.hpp"
#include "lwload/error.hpp"
#include "lwload/profile.hpp"

namespace lwload::cli {
namespace {

struct Run {
  double seconds = 0;
  profile::MemoryFigures growth;
  std::optional<bool> contract_held;  // lwload variants only
  std::string placement;              // as executed (lwload variants)
};

struct Variant {
  std::string name;
  std::function<Run()> run;
  std::vector<Run> runs;
  std::string error;  // set when the variant cannot run here (e.g. O_DIRECT refused)
};

template <typename T, typename Get>
T median(const std::vector<Run>& runs, Get get) {
  std::vector<T> values;
  for (const auto& r : runs) values.push_back(get(r));
  std::sort(values.begin(), values.end());
  if (values.empty()) return T{};
  const std::size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : static_cast<T>((values[mid - 1] + values[mid]) / 2);
}

Run from_measurement(const profile::Measurement& m) {
  return {m.seconds, m.growth(), std::nullopt, ""};
}

std::vector<Placement> applicable_placements(const DeviceInfo& info, const std::string& list) {
  std::vector<Placement> out;
  if (list == "auto") {
    if (info.memory == MemoryModel::unified && info.caps.import_host_ptr) out.push_back(Placement::zero_copy);
    if (info.memory == MemoryModel::unified && info.caps.host_visible_alloc) out.push_back(Placement::direct);
    out.push_back(Placement::staged);
    return out;
  }
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');) {
    const auto p = parse_placement(item);
    if (!p) fail(ErrorCode::usage, "--placements: name placements (zero-copy, direct, staged), not 'auto', in a list");
    out.push_back(*p);
  }
  return out;
}


}  // namespace

int cmd_bench(int argc, char** argv) {
  Args args("bench",
            "Compare lwload with a naive loader and with plain file reads, side by side (medians).\n"
            "--cold evicts the model from the page cache before every repetition (fdatasync +\n"
            "posix_fadvise DONTNEED; works on files this process can open, and is checked with\n"
            "mincore) and then runs lwload's reads with O_DIRECT unless --buffered.",
            {"MODEL"},
            {device_option(),
             {"--placements", "LIST", "comma-separated placements, or auto (every one the device can do)", "auto"},
             {"--reps", "N", "repetitions of each variant", "5"},
             {"--cold", "", "evict the page cache before every repetition", ""},
             {"--buffered", "", "with --cold: lwload reads through the page cache (no O_DIRECT)", ""},
             budget_option(), slots_option(), io_option(), memory_option(), max_alloc_option(),
             {"--buffer", "BYTES", "read buffer of the pread and O_DIRECT variants", "16MiB"},
             {"--no-naive", "", "skip the naive loader (it needs twice the model in memory)", ""},
             {"--json", "", "print the results as one JSON object", ""}});
  if (!args.parse(argc, argv)) return exit_ok;

  const std::uint64_t reps = args.get_uint("--reps");
  if (reps == 0 || reps > 1000) fail(ErrorCode::usage, "--reps: ", reps, " is not between 1 and 1000");
  const bool cold = args.flag("--cold");
  const std::uint64_t buffer = args.get_size("--buffer");
  if (buffer < 4096 || buffer > (1ull << 30)) fail(ErrorCode::usage, "--buffer: ", buffer, " is not 4KiB..1GiB");
  const DeviceOverrides overrides = device_overrides(args);
  LoadOptions load_options;
  load_options.plan = plan_options(args);
  load_options.direct_io = cold && !args.flag("--buffered");
  apply_io_options(args, load_options);

  const Manifest manifest = open_manifest(args.positional(0));
  const auto fs = posix_file_system();
  const auto device = open_device(args.get("--device"), overrides);
  const DeviceInfo& info = device->info();
  const std::uint64_t model_bytes = manifest.total_bytes();

  std::vector<Variant> variants;
  if (!args.flag("--no-naive"))
    variants.push_back({"naive read+copy", [&] {
                          return from_measurement(profile::measure([&] { bench::naive_load(manifest, *fs); }));
                        }, {}, {}});
  variants.push_back({"pread " + format_bytes(buffer), [&] {
                        return from_measurement(profile::measure([&] { bench::pread_files(manifest, *fs, buffer); }));
                      }, {}, {}});
  variants.push_back({"new-memory pread", [&] {
                        return from_measurement(profile::measure([&] { bench::pread_into_new_memory(manifest, *fs, buffer); }));
                      }, {}, {}});
  variants.push_back({"mmap+populate", [&] {
                        return from_measurement(profile::measure([&] { bench::map_and_populate(manifest, *fs); }));
                      }, {}, {}});
  variants.push_back({"O_DIRECT " + format_bytes(buffer), [&] {
                        return from_measurement(profile::measure([&] { bench::direct_read_files(manifest, *fs, buffer); }));
                      }, {}, {}});
  for (const Placement p : applicable_placements(info, args.get("--placements"))) {
    variants.push_back({info.backend + " " + std::string(placement_name(p)), [&, p] {
                          profile::ProfileOptions po;
                          po.load = load_options;
                          po.load.plan.force = p;
                          const profile::Report r = profile::profile_load(manifest, *device, po);
                          return Run{r.load_ms / 1000.0, r.growth, r.contract.held, r.placement};
                        }, {}, {}});
  }

  // Warm: one untimed pass puts the files in the page cache. Cold: eviction before each run.
  double cached_before = 0;  // warm: after warming; cold: the most left after any eviction
  if (!cold) {
    bench::pread_files(manifest, *fs, buffer);
    cached_before = bench::cached_fraction(manifest.files);
  }
  for (std::uint64_t rep = 0; rep < reps; ++rep) {
    for (auto& v : variants) {
      if (!v.error.empty()) continue;
      if (cold) {
        for (const auto& f : manifest.files) bench::evict_from_page_cache(f);
        cached_before = std::max(cached_before, bench::cached_fraction(manifest.files));
      }
      try {
        v.runs.push_back(v.run());
      } catch (const Error& e) {
        if (e.code() != ErrorCode::unsupported && e.code() != ErrorCode::does_not_fit) throw;
        v.error = e.what();  // this variant cannot run here; the others go on
      }
      bench::release_freed_memory();  // the next variant's baseline holds no freed heap
      if (!args.flag("--json")) std::cerr << '.' << std::flush;
    }
  }
  if (!args.flag("--json")) std::cerr << '\n';

  const auto median_seconds = [](const Variant& v) { return median<double>(v.runs, [](const Run& r) { return r.seconds; }); };
  const auto find = [&](std::string_view prefix) -> const Variant* {
    for (const auto& v : variants)
      if (v.name.starts_with(prefix) && !v.runs.empty()) return &v;
    return nullptr;
  };
  const Variant* naive = find("naive");
  const Variant* pread = find("pread");
  const Variant* odirect = find("O_DIRECT");
  const Variant* fresh = find("new-memory");
  const Variant* populate = find("mmap+populate");
  const auto ratio = [&](const Variant* ref, double t) { return ref && t > 0 ? median_seconds(*ref) / t : 0.0; };

  if (args.flag("--json")) {
    boost::json::object out;
    out["model"] = args.positional(0);
    out["format"] = manifest.format;
    out["tensors"] = manifest.tensors.size();
    out["model_bytes"] = model_bytes;
    out["device"] = info.id();
    out["memory"] = memory_model_name(info.memory);
    out["cache"] = cold ? "cold" : "warm";
    out[cold ? "max_cached_after_eviction" : "cached_after_warmup"] = cached_before;
    out["reps"] = reps;
    out["staging_budget"] = load_options.plan.staging_budget;
    out["lwload_direct_io"] = load_options.direct_io;
    out["peak_from_kernel_hwm"] = profile::reset_peak_rss();
    boost::json::array list;
    for (const auto& v : variants) {
      boost::json::object o;
      o["name"] = v.name;
      if (v.runs.empty()) {
        o["error"] = v.error;
        list.push_back(std::move(o));
        continue;
      }
      const double t = median_seconds(v);
      boost::json::array seconds;
      for (const auto& r : v.runs) seconds.push_back(r.seconds);
      o["seconds"] = std::move(seconds);
      o["seconds_median"] = t;
      o["gib_per_s"] = t > 0 ? static_cast<double>(model_bytes) / (1ull << 30) / t : 0.0;
      o["peak_growth"] = median<std::uint64_t>(v.runs, [](const Run& r) { return r.growth.rss; });
      o["anon_growth"] = median<std::uint64_t>(v.runs, [](const Run& r) { return r.growth.anon; });
      o["file_growth"] = median<std::uint64_t>(v.runs, [](const Run& r) { return r.growth.file; });
      o["vs_naive"] = ratio(naive, t);
      o["vs_pread"] = ratio(pread, t);
      o["vs_o_direct"] = ratio(odirect, t);
      o["vs_new_memory_pread"] = ratio(fresh, t);
      o["vs_mmap_populate"] = ratio(populate, t);
      if (v.runs.front().contract_held) {
        bool held = true;
        for (const auto& r : v.runs) held = held && r.contract_held.value_or(false);
        o["contract_held"] = held;
        o["placement"] = v.runs.front().placement;
      }
      list.push_back(std::move(o));
    }
    out["variants"] = std::move(list);
    std::cout << boost::json::serialize(out) << '\n';
    return exit_ok;
  }

  std::cout << "model    " << args.positional(0) << " (" << manifest.format << ", " << manifest.tensors.size()
            << " tensors, " << format_bytes(model_bytes) << ")\n";
  std::cout << "device   " << info.id() << " (" << info.name << ", " << memory_model_name(info.memory) << " memory)\n";
  char line[512];
  if (cold)
    std::snprintf(line, sizeof line,
                  "cache    cold: evicted before every repetition; at most %.1f%% of the file still cached after "
                  "eviction%s\n",
                  cached_before * 100, cached_before > 0.01 ? "  <-- EVICTION INCOMPLETE" : "");
  else
    std::snprintf(line, sizeof line, "cache    warm: %.1f%% of the file cached after a warm-up read\n", cached_before * 100);
  std::cout << line;
  std::cout << "runs     median of " << reps << "; staging budget " << format_bytes(load_options.plan.staging_budget)
            << (load_options.direct_io ? "; lwload reads with O_DIRECT" : "") << "\n\n";
  std::snprintf(line, sizeof line, "%-22s %11s %11s %13s %13s %9s %8s %7s %7s %10s  %s\n", "variant", "time", "GiB/s",
                "peak-base", "anon growth", "vs naive", "% pread", "% new", "% mmap", "% O_DIRECT", "contract");
  std::cout << line;
  for (const auto& v : variants) {
    if (v.runs.empty()) {
      std::cout << v.name << ": not run: " << v.error << '\n';
      continue;
    }
    const double t = median_seconds(v);
    const std::uint64_t grown = median<std::uint64_t>(v.runs, [](const Run& r) { return r.growth.rss; });
    const std::uint64_t anon = median<std::uint64_t>(v.runs, [](const Run& r) { return r.growth.anon; });
    std::string contract = "-";
    if (v.runs.front().contract_held) {
      bool held = true;
      for (const auto& r : v.runs) held = held && r.contract_held.value_or(false);
      contract = std::string(held ? "HELD" : "VIOLATED") + " (" + v.runs.front().placement + ")";
    }
    char ms[32], gibs[32], vs_naive[32], vs_pread[32], vs_fresh[32], vs_direct[32], vs_populate[32];
    std::snprintf(ms, sizeof ms, "%.1f ms", t * 1000);
    std::snprintf(gibs, sizeof gibs, "%.2f", t > 0 ? static_cast<double>(model_bytes) / (1ull << 30) / t : 0.0);
    std::snprintf(vs_naive, sizeof vs_naive, "%.2fx", ratio(naive, t));
    std::snprintf(vs_pread, sizeof vs_pread, "%.0f%%", ratio(pread, t) * 100);
    std::snprintf(vs_direct, sizeof vs_direct, "%.0f%%", ratio(odirect, t) * 100);
    std::snprintf(vs_fresh, sizeof vs_fresh, "%.0f%%", ratio(fresh, t) * 100);
    std::snprintf(vs_populate, sizeof vs_populate, "%.0f%%", ratio(populate, t) * 100);
    std::snprintf(line, sizeof line, "%-22s %11s %11s %13s %13s %9s %8s %7s %7s %10s  %s\n", v.name.c_str(), ms, gibs,
                  profile::mib(grown).c_str(), profile::mib(anon).c_str(), naive ? vs_naive : "-", pread ? vs_pread : "-",
                  fresh ? vs_fresh : "-", populate ? vs_populate : "-", odirect ? vs_direct : "-", contract.c_str());
    std::cout << line;
  }
  std::cout << "\nvs naive: naive time / time (higher is faster); % pread, % new, % mmap, % O_DIRECT: their time / time\n"
               "(throughput as a share of that read limit; 'new' = pread into new, never-touched memory, the floor\n"
               "for any loader that owns its copy; 'mmap' = map + populate every page, the floor for zero-copy\n"
               "that is resident when ready); peak-base: peak RSS minus the variant's own baseline.\n";
  return exit_ok;
}

}  // namespace lwload::cli
