// Report → JSON (Boost.JSON) and CSV: the machine-readable forms of `lwload profile`.
#include <boost/json.hpp>
#include <cstdio>

#include "lwload/profile.hpp"

namespace lwload::profile {
namespace {

boost::json::object figures_json(const MemoryFigures& f) {
  return {{"rss", f.rss}, {"anon", f.anon}, {"file", f.file}, {"shmem", f.shmem}};
}

}  // namespace

std::string report_to_json(const Report& r) {
  boost::json::object out;
  out["model"] = r.model;
  out["format"] = r.format;
  out["device"] = r.device;
  out["memory"] = r.memory;
  out["placement"] = r.placement;
  out["io_engine"] = r.io_engine;
  out["tensor_count"] = r.tensor_count;
  out["model_bytes"] = r.model_bytes;
  out["largest_tensor"] = {{"name", r.largest_tensor_name}, {"bytes", r.largest_tensor}};
  out["staging_budget"] = r.staging_budget;
  out["load_begin_ms"] = r.load_begin_ms;
  out["load_ms"] = r.load_ms;
  out["sample_period_ms"] = r.period_ms;
  out["baseline"] = figures_json(r.baseline);
  out["peak"] = figures_json(r.peak);
  out["growth"] = figures_json(r.growth);
  out["peak_is_kernel_hwm"] = r.hwm_exact;
  out["placement_bytes"] = {{"zero_copy", r.inputs.zero_copy_bytes},
                            {"direct", r.inputs.direct_bytes},
                            {"staged", r.inputs.staged_bytes}};
  out["max_in_flight"] = r.max_in_flight;
  out["populate_ms"] = r.populate_ms;
  out["resident_bytes"] = r.inputs.resident_bytes;
  out["lazy"] = r.inputs.lazy;
  const auto pss_json = [](const std::optional<Proportional>& p) -> boost::json::value {
    if (!p) return nullptr;
    return boost::json::object{{"pss", p->pss}, {"pss_anon", p->pss_anon}, {"pss_file", p->pss_file}};
  };
  out["pss_baseline"] = pss_json(r.pss_baseline);
  out["pss_loaded"] = pss_json(r.pss_loaded);

  boost::json::object contract;
  contract["rule"] = r.contract.rule;
  contract["bound"] = r.contract.bound;
  contract["anon_growth_limit"] = r.contract.anon_growth_limit
                                      ? boost::json::value(*r.contract.anon_growth_limit)
                                      : boost::json::value(nullptr);
  contract["held"] = r.contract.held;
  contract["verdict"] = r.contract.verdict;
  out["contract"] = std::move(contract);

  // Columns rather than objects per sample: a long timeline stays compact.
  boost::json::object samples;
  boost::json::array ms, rss, anon, file, shmem;
  for (const auto& s : r.samples) {
    ms.push_back(s.ms);
    rss.push_back(s.rss);
    anon.push_back(s.anon);
    file.push_back(s.file);
    shmem.push_back(s.shmem);
  }
  samples["ms"] = std::move(ms);
  samples["rss"] = std::move(rss);
  samples["anon"] = std::move(anon);
  samples["file"] = std::move(file);
  samples["shmem"] = std::move(shmem);
  out["samples"] = std::move(samples);

  boost::json::array phases;
  for (const auto& p : r.phases) phases.push_back({{"name", p.name}, {"begin_ms", p.begin_ms}, {"end_ms", p.end_ms}});
  out["phases"] = std::move(phases);
  boost::json::array tensors;
  for (const auto& t : r.tensors)
    tensors.push_back({{"tensor", t.tensor}, {"begin_ms", t.begin_ms}, {"end_ms", t.end_ms}, {"bytes", t.bytes}});
  out["tensors"] = std::move(tensors);
  return boost::json::serialize(out);
}

std::string report_to_csv(const Report& r) {
  std::string out = "ms,rss,anon,file,shmem,in_flight\n";
  std::size_t f = 0;
  std::uint64_t in_flight = 0;
  char line[160];
  for (const auto& s : r.samples) {
    // The last in-flight figure reported at or before this sample.
    while (f < r.in_flight.size() && r.in_flight[f].ms <= s.ms) in_flight = r.in_flight[f++].bytes;
    std::snprintf(line, sizeof line, "%.3f,%llu,%llu,%llu,%llu,%llu\n", s.ms,
                  static_cast<unsigned long long>(s.rss), static_cast<unsigned long long>(s.anon),
                  static_cast<unsigned long long>(s.file), static_cast<unsigned long long>(s.shmem),
                  static_cast<unsigned long long>(in_flight));
    out += line;
  }
  return out;
}

}  // namespace lwload::profile
