// lwload bench: in one run, side by side, the median of several repetitions of
//   - the naive loader (whole file into memory, then a copy per tensor), with plain and with
//     huge-page (MADV_HUGEPAGE, as numpy) buffers; ratios are against the faster of the two,
//   - sequential pread of the file (the page-cache limit) and O_DIRECT reads (the disk limit),
//   - lwload::load with each applicable placement on the chosen device;
// each with its time, throughput, peak RSS growth over its own baseline, and ratios against the
// naive loader and the read limits. Variants run interleaved, one repetition of each in turn, so
// drift of the machine affects them alike. Every row is timed alike: from the first open to the
// data ready; what is freed or unmapped afterwards is not timed (bench_baselines.hpp).
#include <algorithm>
#include <boost/json.hpp>
#include <cstdio>
#include <functional>
#include <iomanip>
#include <map>
#include <iostream>
#include <numeric>
#include <random>
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

// The limits and the loader lwload is compared with; each anchors one ratio column.
enum class Reference { none, naive, pread, new_memory, populate, o_direct };
constexpr Reference kReferences[] = {Reference::naive, Reference::pread, Reference::new_memory, Reference::populate,
                                     Reference::o_direct};

// Column header and JSON key of each reference's ratio.
const char* column(Reference r) {
  switch (r) {
    case Reference::naive: return "vs naive";
    case Reference::pread: return "% pread";
    case Reference::new_memory: return "% new";
    case Reference::populate: return "% mmap";
    case Reference::o_direct: return "% O_DIRECT";
    case Reference::none: break;
  }
  return "";
}
const char* json_key(Reference r) {
  switch (r) {
    case Reference::naive: return "vs_naive";
    case Reference::pread: return "vs_pread";
    case Reference::new_memory: return "vs_new_memory_pread";
    case Reference::populate: return "vs_mmap_populate";
    case Reference::o_direct: return "vs_o_direct";
    case Reference::none: break;
  }
  return "";
}

struct Run {
  double seconds = 0;
  profile::MemoryFigures growth;
  std::optional<bool> contract_held;  // lwload variants only
  std::string placement;              // as executed (lwload variants)
  double populate_ms = 0;             // lwload zero_copy: making the pages resident
  std::uint64_t resident = 0, zero_copy = 0;
  bool lazy_mapping = false;  // lwload --lazy with zero_copy tensors: timed a mapping, not resident data
};

struct Variant {
  std::string name;
  Reference role = Reference::none;  // the reference this variant is, if any
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

// Runs a reference under the profiler's measure() and stops its clock where it says its data is
// ready (before its teardown), as lwload's stops when load() returns.
Run timed_until_ready(const std::function<void(const bench::Ready&)>& body) {
  using Clock = std::chrono::steady_clock;
  Clock::time_point begin, ready;
  const profile::Measurement m = profile::measure([&] {
    begin = Clock::now();
    body([&ready] { ready = Clock::now(); });
  });
  if (ready == Clock::time_point{}) fail(ErrorCode::device, "bench: a reference never reported its data ready");
  return {std::chrono::duration<double>(ready - begin).count(), m.growth(), std::nullopt, "", 0, 0, 0, false};
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

struct Setup {
  const Manifest& manifest;
  Device& device;
  const LoadOptions& load_options;
  std::shared_ptr<FileSystem> fs;
  std::uint64_t buffer = 0;
  bool naive = true;
  bool default_plan = true;  // a variant with nothing forced (--placements auto)
};

// 1. What runs: the references, then lwload with each placement.
std::vector<Variant> collect_variants(const Setup& s, const std::vector<Placement>& placements) {
  std::vector<Variant> variants;
  using bench::Ready;
  const auto baseline = [&](std::string name, Reference role, std::function<void(const Ready&)> body) {
    variants.push_back({std::move(name), role, [body] { return timed_until_ready(body); }, {}, {}});
  };
  // The naive loader ends where lwload does: on a device API, read + copy + upload per tensor.
  // Run twice: with plain malloc'ed buffers and with huge-page ones (numpy's); the faster counts.
  const std::string& backend = s.device.info().backend;
  for (const auto memory : {bench::NaiveMemory::plain, bench::NaiveMemory::huge_pages}) {
    if (!s.naive) break;
    const std::string thp = memory == bench::NaiveMemory::huge_pages ? " THP" : "";
    if (backend == "host" || backend == "null")
      baseline("naive read+copy" + thp, Reference::naive, [&s, memory](const Ready& ready) {
        bench::naive_load(
            s.manifest, *s.fs,
            [&ready](bench::NaiveStep step) {
              if (step == bench::NaiveStep::ready) ready();
            },
            memory);
      });
    else
      baseline("naive " + backend + " upload" + thp, Reference::naive, [&s, memory](const Ready& ready) {
        bench::naive_device_load(s.manifest, *s.fs, s.device, memory, ready);
      });
  }
  baseline("pread " + format_bytes(s.buffer), Reference::pread,
           [&s](const Ready& ready) { bench::pread_files(s.manifest, *s.fs, s.buffer, ready); });
  baseline("new-memory pread", Reference::new_memory,
           [&s](const Ready& ready) { bench::pread_into_new_memory(s.manifest, *s.fs, s.buffer, ready); });
  baseline("mmap+POPULATE_READ", Reference::populate,
           [&s](const Ready& ready) { bench::map_and_populate(s.manifest, *s.fs, ready); });
  baseline("O_DIRECT " + format_bytes(s.buffer), Reference::o_direct,
           [&s](const Ready& ready) { bench::direct_read_files(s.manifest, *s.fs, s.buffer, ready); });
  // lwload as a user gets it (the plan chooses placements and reads from the device and the page
  // cache), then each choice forced: every placement buffered, and staged with O_DIRECT too.
  const auto lwload_variant = [&](std::string name, std::optional<Placement> force, std::optional<bool> direct_io) {
    variants.push_back({s.device.info().backend + " " + name,
                        Reference::none,
                        [&s, force, direct_io] {
                          profile::ProfileOptions po;
                          po.load = s.load_options;
                          po.load.plan.force = force;
                          po.load.plan.direct_io = direct_io;
                          const profile::Report r = profile::profile_load(s.manifest, s.device, po);
                          return Run{r.load_ms / 1000.0,
                                     r.growth,
                                     r.contract.held,
                                     r.placement + (r.direct_io ? " + O_DIRECT" : ""),
                                     r.populate_ms,
                                     r.inputs.resident_bytes,
                                     r.inputs.zero_copy_bytes,
                                     r.inputs.lazy && r.inputs.zero_copy_bytes > 0};
                        },
                        {},
                        {}});
  };
  if (s.default_plan) lwload_variant("default", std::nullopt, s.load_options.plan.direct_io);
  for (const Placement p : placements) {
    lwload_variant(std::string(placement_name(p)), p, false);
    if (p == Placement::staged) lwload_variant("staged O_DIRECT", p, true);
  }
  return variants;
}

// 2. Runs every variant `reps` times, interleaved in a shuffled order. Returns the page-cache fraction that matters:
// warm, after the warm-up read; cold, the most left after any eviction.
double run_variants(std::vector<Variant>& variants, const Setup& s, std::uint64_t reps, bool cold, bool quiet) {
  double cached = 0;
  if (!cold) {
    bench::pread_files(s.manifest, *s.fs, s.buffer);
    cached = bench::cached_fraction(s.manifest.files);
  }
  std::vector<std::size_t> order(variants.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::mt19937 shuffle(20261126);  // fixed: a run can be repeated
  for (std::uint64_t rep = 0; rep < reps; ++rep) {
    // A new order each repetition, so no variant always runs first (after the warm-up) or after
    // the same neighbour (what a reference leaves in the caches is not charged to one variant).
    std::shuffle(order.begin(), order.end(), shuffle);
    for (const std::size_t k : order) {
      Variant& v = variants[k];
      if (!v.error.empty()) continue;
      if (cold) {
        for (const auto& f : s.manifest.files) bench::evict_from_page_cache(f);
        cached = std::max(cached, bench::cached_fraction(s.manifest.files));
      }
      try {
        v.runs.push_back(v.run());
      } catch (const Error& e) {
        if (e.code() != ErrorCode::unsupported && e.code() != ErrorCode::does_not_fit) throw;
        v.error = e.what();  // this variant cannot run here; the others go on
      }
      bench::release_freed_memory();  // the next variant's baseline holds no freed heap
      if (!quiet) std::cerr << '.' << std::flush;
    }
  }
  if (!quiet) std::cerr << '\n';
  return cached;
}

// 3. Each variant's medians and its ratios to the references.
struct Row {
  const Variant* variant = nullptr;
  double seconds = 0;
  std::uint64_t grown = 0, anon = 0, file = 0;
  std::map<Reference, double> ratios;  // reference time / this time, for the references that ran
  std::optional<bool> held;            // every run's contract (lwload variants)
  bool lazy_mapping = false;           // timed a mapping only: no ratios (they would compare unlike work)
};

constexpr const char* kLazyMark = "lazy (mapping only, not resident)";

std::vector<Row> summarize(const std::vector<Variant>& variants) {
  const auto seconds = [](const Variant& v) { return median<double>(v.runs, [](const Run& r) { return r.seconds; }); };
  // Each reference's time; of several variants of one reference (the naive loader with and without
  // huge pages), the fastest: a ratio against the slower would flatter lwload.
  std::map<Reference, double> reference_seconds;
  for (const auto& v : variants) {
    if (v.role == Reference::none || v.runs.empty()) continue;
    const double t = seconds(v);
    const auto [it, first] = reference_seconds.emplace(v.role, t);
    if (!first) it->second = std::min(it->second, t);
  }
  std::vector<Row> rows;
  for (const auto& v : variants) {
    Row row;
    row.variant = &v;
    if (v.runs.empty()) {
      rows.push_back(row);
      continue;
    }
    row.seconds = seconds(v);
    row.grown = median<std::uint64_t>(v.runs, [](const Run& r) { return r.growth.rss; });
    row.anon = median<std::uint64_t>(v.runs, [](const Run& r) { return r.growth.anon; });
    row.file = median<std::uint64_t>(v.runs, [](const Run& r) { return r.growth.file; });
    row.lazy_mapping = v.runs.front().lazy_mapping;
    if (!row.lazy_mapping)
      for (const auto& [ref, t] : reference_seconds) row.ratios[ref] = row.seconds > 0 ? t / row.seconds : 0.0;
    if (v.runs.front().contract_held) {
      bool held = true;
      for (const auto& r : v.runs) held = held && r.contract_held.value_or(false);
      row.held = held;
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

double gib_per_s(std::uint64_t bytes, double seconds) {
  return seconds > 0 ? static_cast<double>(bytes) / (1ull << 30) / seconds : 0.0;
}

// 4. Printing.
void print_json(const std::vector<Row>& rows, boost::json::object out, std::uint64_t model_bytes) {
  boost::json::array list;
  for (const Row& row : rows) {
    const Variant& v = *row.variant;
    boost::json::object o;
    o["name"] = v.name;
    if (v.runs.empty()) {
      o["error"] = v.error;
      list.push_back(std::move(o));
      continue;
    }
    boost::json::array seconds;
    for (const auto& r : v.runs) seconds.push_back(r.seconds);
    o["seconds"] = std::move(seconds);
    o["seconds_median"] = row.seconds;
    o["gib_per_s"] = gib_per_s(model_bytes, row.seconds);
    o["peak_growth"] = row.grown;
    o["anon_growth"] = row.anon;
    o["file_growth"] = row.file;
    for (const Reference ref : kReferences) o[json_key(ref)] = row.ratios.contains(ref) ? row.ratios.at(ref) : 0.0;
    if (row.lazy_mapping) o["lazy_mapping_only"] = true;  // its time is a mapping's; ratios left at 0
    if (row.held) {
      o["contract_held"] = *row.held;
      o["placement"] = v.runs.front().placement;
      o["populate_ms"] = median<double>(v.runs, [](const Run& r) { return r.populate_ms; });
      o["resident_bytes"] = median<std::uint64_t>(v.runs, [](const Run& r) { return r.resident; });
      o["zero_copy_bytes"] = v.runs.front().zero_copy;
    }
    list.push_back(std::move(o));
  }
  out["variants"] = std::move(list);
  std::cout << valid_utf8_json(boost::json::serialize(out)) << '\n';
}

void print_table(const std::vector<Row>& rows, std::uint64_t model_bytes) {
  char line[512];
  std::snprintf(line, sizeof line, "%-22s %11s %11s %13s %13s", "variant", "time", "GiB/s", "peak-base", "anon growth");
  std::cout << line;
  for (const Reference ref : kReferences) std::cout << ' ' << std::setw(10) << column(ref);
  std::cout << "  contract\n";
  std::vector<std::string> notes;
  for (const Row& row : rows) {
    const Variant& v = *row.variant;
    if (v.runs.empty()) {
      std::cout << v.name << ": not run: " << v.error << '\n';
      continue;
    }
    char ms[32], gibs[32];
    std::snprintf(ms, sizeof ms, "%.1f ms", row.seconds * 1000);
    std::snprintf(gibs, sizeof gibs, "%.2f", gib_per_s(model_bytes, row.seconds));
    std::snprintf(line, sizeof line, "%-22s %11s %11s %13s %13s", v.name.c_str(), ms, gibs,
                  profile::mib(row.grown).c_str(), profile::mib(row.anon).c_str());
    std::cout << line;
    for (const Reference ref : kReferences) {
      char cell[32] = "-";
      if (row.ratios.contains(ref))
        std::snprintf(cell, sizeof cell, ref == Reference::naive ? "%.2fx" : "%.0f%%",
                      row.ratios.at(ref) * (ref == Reference::naive ? 1 : 100));
      std::cout << ' ' << std::setw(10) << cell;
    }
    std::cout << "  "
              << (row.held ? std::string(*row.held ? "HELD" : "VIOLATED") + " (" + v.runs.front().placement + ")" : "-")
              << (row.lazy_mapping ? std::string("  ") + kLazyMark : "") << '\n';
    const Run& first = v.runs.front();
    if (first.zero_copy > 0 && !row.lazy_mapping) {
      char note[256];
      std::snprintf(note, sizeof note,
                    "%s: pages made resident in %.1f ms (median); %.0f%% of the zero_copy bytes "
                    "resident when load() returned",
                    v.name.c_str(), median<double>(v.runs, [](const Run& r) { return r.populate_ms; }),
                    100.0 *
                        static_cast<double>(median<std::uint64_t>(v.runs, [](const Run& r) { return r.resident; })) /
                        static_cast<double>(first.zero_copy));
      notes.emplace_back(note);
    }
  }
  for (const auto& note : notes) std::cout << note << '\n';
  std::cout << "\nvs naive: the faster naive variant's time / time (higher is faster); % pread, % new, % mmap,\n"
               "% O_DIRECT: their time / time (throughput as a share of that read limit; 'new' = pread into new,\n"
               "never-touched memory, the floor for any loader that owns its copy; 'mmap' = map + one\n"
               "MADV_POPULATE_READ, the floor for zero-copy that is resident when ready); THP: buffers advised\n"
               "MADV_HUGEPAGE, as numpy does; peak-base: peak RSS minus the variant's own baseline.\n"
               "Every row: from the first open to the data ready; freeing and munmap afterwards not timed.\n";
}

}  // namespace

int cmd_bench(int argc, char** argv) {
  Args args("bench",
            "Compare lwload with a naive loader and with plain file reads, side by side (medians).\n"
            "--cold evicts the model from the page cache before every repetition (fdatasync +\n"
            "posix_fadvise DONTNEED; works on files this process can open, and is checked with\n"
            "cachestat). lwload runs as planned (\"default\": placements and O_DIRECT chosen from the\n"
            "device and the page cache) and with each choice forced: every placement buffered, staged\n"
            "with O_DIRECT too.",
            {"MODEL"},
            {device_option(),
             links_option(),
             densify_option(),
             {"--placements", "LIST", "comma-separated placements, or auto (every one the device can do)", "auto"},
             {"--reps", "N", "repetitions of each variant", "5"},
             {"--cold", "", "evict the page cache before every repetition", ""},
             budget_option(),
             slots_option(),
             io_option(),
             lazy_option(),
             memory_option(),
             max_alloc_option(),
             {"--buffer", "BYTES", "read buffer of the pread and O_DIRECT variants", "16MiB"},
             {"--no-naive", "", "skip the naive loader (it needs twice the model in memory)", ""},
             {"--json", "", "print the results as one JSON object", ""}});
  if (!args.parse(argc, argv)) return exit_ok;

  const std::uint64_t reps = args.get_uint("--reps");
  if (reps == 0 || reps > 1000) fail(ErrorCode::usage, "--reps: ", reps, " is not between 1 and 1000");
  const bool cold = args.flag("--cold"), json = args.flag("--json");
  const std::uint64_t buffer = args.get_size("--buffer");
  if (buffer < 4096 || buffer > (1ull << 30)) fail(ErrorCode::usage, "--buffer: ", buffer, " is not 4KiB..1GiB");
  const DeviceOverrides overrides = device_overrides(args);
  LoadOptions load_options;
  load_options.plan = plan_options(args);
  apply_io_options(args, load_options);

  const Manifest manifest = open_model(args);
  const auto device = open_device(args.get("--device"), overrides);
  const DeviceInfo& info = device->info();
  const std::uint64_t model_bytes = manifest.total_bytes();
  const Setup setup{manifest,
                    *device,
                    load_options,
                    posix_file_system(),
                    buffer,
                    !args.flag("--no-naive"),
                    args.get("--placements") == "auto"};

  std::vector<Variant> variants = collect_variants(setup, applicable_placements(info, args.get("--placements")));
  const double cached = run_variants(variants, setup, reps, cold, json);
  const std::vector<Row> rows = summarize(variants);

  if (json) {
    boost::json::object out;
    out["model"] = args.positional(0);
    out["format"] = manifest.format;
    out["tensors"] = manifest.tensors.size();
    out["model_bytes"] = model_bytes;
    out["device"] = info.id();
    out["memory"] = memory_model_name(info.memory);
    out["cache"] = cold ? "cold" : "warm";
    out[cold ? "max_cached_after_eviction" : "cached_after_warmup"] = cached;
    out["reps"] = reps;
    out["staging_budget"] = load_options.plan.staging_budget;
    out["peak_from_kernel_hwm"] = profile::reset_peak_rss();
    out["clock"] = "first open to data ready; freeing and munmap not timed";
    print_json(rows, std::move(out), model_bytes);
    return exit_ok;
  }

  std::cout << "model    " << printable(args.positional(0)) << " (" << manifest.format << ", "
            << manifest.tensors.size() << " tensors, " << format_bytes(model_bytes) << ")\n";
  std::cout << "device   " << info.id() << " (" << info.name << ", " << memory_model_name(info.memory) << " memory)\n";
  char line[512];
  if (cold)
    std::snprintf(line, sizeof line,
                  "cache    cold: evicted before every repetition; at most %.1f%% of the file still cached after "
                  "eviction%s\n",
                  cached * 100, cached > 0.01 ? "  <-- EVICTION INCOMPLETE" : "");
  else
    std::snprintf(line, sizeof line, "cache    warm: %.1f%% of the file cached after a warm-up read\n", cached * 100);
  std::cout << line;
  std::cout << "clock    every row from the first open to the data ready (read, copied or resident); "
               "freeing and munmap afterwards are not timed\n";
  std::cout << "runs     median of " << reps << "; staging budget " << format_bytes(load_options.plan.staging_budget)
            << "\n\n";
  print_table(rows, model_bytes);
  return exit_ok;
}

}  // namespace lwload::cli
