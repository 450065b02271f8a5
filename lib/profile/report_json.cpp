// Report → JSON (Boost.JSON) and CSV: the machine-readable forms of `lwload profile`.
#include <boost/json.hpp>
#include <cstdio>

#include "lwload/error.hpp"
#include "lwload/profile.hpp"

namespace lwload::profile {
namespace {

boost::json::object figures_json(const MemoryFigures& f) {
  return {{"rss", f.rss}, {"anon", f.anon}, {"file", f.file}, {"shmem", f.shmem}};
}

// A sample's byte columns, in the order they are written after its "ms" column.
constexpr std::pair<std::string_view, std::uint64_t MemorySample::*> kSampleColumns[] = {
    {"rss", &MemorySample::rss},
    {"anon", &MemorySample::anon},
    {"file", &MemorySample::file},
    {"shmem", &MemorySample::shmem}};

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
  out["placement_bytes"] = {
      {"zero_copy", r.inputs.zero_copy_bytes}, {"direct", r.inputs.direct_bytes}, {"staged", r.inputs.staged_bytes}};
  out["max_in_flight"] = r.max_in_flight;
  out["populate_ms"] = r.populate_ms;
  out["resident_bytes"] = r.inputs.resident_bytes;
  out["lazy"] = r.inputs.lazy;
  {
    // The plan's host-memory figures against the machine (docs/ARCHITECTURE.md "Over-memory loads").
    const HostMemory& h = r.inputs.host;
    out["host_memory"] = {{"pinned", h.pinned},
                          {"evictable", h.evictable},
                          {"anonymous", h.anonymous},
                          {"resident", h.resident},
                          {"lazy", h.lazy},
                          {"resident_at_ready", h.resident_at_ready},
                          {"available", h.machine.host_available()},
                          {"bound_by", h.machine.host_bound_by()},
                          {"verdict", h.verdict}};
  }
  const auto pss_json = [](const std::optional<Proportional>& p) -> boost::json::value {
    if (!p) return nullptr;
    return boost::json::object{{"pss", p->pss}, {"pss_anon", p->pss_anon}, {"pss_file", p->pss_file}};
  };
  out["pss_baseline"] = pss_json(r.pss_baseline);
  out["pss_loaded"] = pss_json(r.pss_loaded);

  boost::json::object contract;
  contract["rule"] = r.contract.rule;
  contract["bound"] = r.contract.bound;
  contract["anon_growth_limit"] =
      r.contract.anon_growth_limit ? boost::json::value(*r.contract.anon_growth_limit) : boost::json::value(nullptr);
  contract["held"] = r.contract.held;
  contract["verdict"] = r.contract.verdict;
  out["contract"] = std::move(contract);

  // Columns rather than objects per sample: a long timeline stays compact.
  boost::json::object samples;
  boost::json::array ms;
  for (const auto& s : r.samples) ms.push_back(s.ms);
  samples["ms"] = std::move(ms);
  for (const auto& [key, member] : kSampleColumns) {
    boost::json::array column;
    for (const auto& s : r.samples) column.push_back(s.*member);
    samples[key] = std::move(column);
  }
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

namespace {

// Typed reads of a report_to_json object, each failing with the field's name.
struct JsonReader {
  const boost::json::object& o;

  const boost::json::value& at(std::string_view key) const {
    const auto* v = o.if_contains(key);
    if (!v) fail(ErrorCode::bad_input, "profile report: field '", key, "' is missing");
    return *v;
  }
  std::string text(std::string_view key) const {
    const auto* s = at(key).if_string();
    if (!s) fail(ErrorCode::bad_input, "profile report: field '", key, "' is not a string");
    return std::string(*s);
  }
  double number(std::string_view key) const {
    const auto& v = at(key);
    if (!v.is_number()) fail(ErrorCode::bad_input, "profile report: field '", key, "' is not a number");
    return v.to_number<double>();
  }
  std::uint64_t bytes(std::string_view key) const {
    const auto& v = at(key);
    if (v.is_uint64()) return v.get_uint64();
    if (v.is_int64() && v.get_int64() >= 0) return static_cast<std::uint64_t>(v.get_int64());
    fail(ErrorCode::bad_input, "profile report: field '", key, "' is not a byte count");
  }
  const boost::json::object& object(std::string_view key) const {
    const auto* obj = at(key).if_object();
    if (!obj) fail(ErrorCode::bad_input, "profile report: field '", key, "' is not an object");
    return *obj;
  }
  const boost::json::array& array(std::string_view key) const {
    const auto* a = at(key).if_array();
    if (!a) fail(ErrorCode::bad_input, "profile report: field '", key, "' is not an array");
    return *a;
  }
};

MemoryFigures figures_from(const boost::json::object& o) {
  const JsonReader f{o};
  return {f.bytes("rss"), f.bytes("anon"), f.bytes("file"), f.bytes("shmem")};
}

// The report's plain fields by type, each with its key, in the order a report is read.
template <typename T>
using Fields = std::pair<std::string_view, T Report::*>[];
constexpr Fields<std::string> kTexts = {{"model", &Report::model},         {"format", &Report::format},
                                        {"device", &Report::device},       {"memory", &Report::memory},
                                        {"placement", &Report::placement}, {"io_engine", &Report::io_engine}};
constexpr Fields<std::uint64_t> kCounts = {{"tensor_count", &Report::tensor_count},
                                           {"model_bytes", &Report::model_bytes}};
constexpr Fields<double> kTimes = {{"load_begin_ms", &Report::load_begin_ms},
                                   {"load_ms", &Report::load_ms},
                                   {"populate_ms", &Report::populate_ms},
                                   {"sample_period_ms", &Report::period_ms}};
constexpr Fields<MemoryFigures> kFigures = {
    {"baseline", &Report::baseline}, {"peak", &Report::peak}, {"growth", &Report::growth}};

}  // namespace

Report report_from_json(std::string_view json) {
  boost::system::error_code ec;
  const boost::json::value parsed = boost::json::parse(json, ec);
  if (ec || !parsed.is_object()) fail(ErrorCode::bad_input, "profile report: not a JSON object (", ec.message(), ")");
  const JsonReader in{parsed.get_object()};
  Report r;
  for (const auto& [key, member] : kTexts) r.*member = in.text(key);
  for (const auto& [key, member] : kCounts) r.*member = in.bytes(key);
  const JsonReader largest{in.object("largest_tensor")};
  r.largest_tensor = largest.bytes("bytes");
  r.largest_tensor_name = largest.text("name");
  r.staging_budget = in.bytes("staging_budget");
  for (const auto& [key, member] : kTimes) r.*member = in.number(key);
  for (const auto& [key, member] : kFigures) r.*member = figures_from(in.object(key));
  r.hwm_exact = in.at("peak_is_kernel_hwm").is_bool() && in.at("peak_is_kernel_hwm").get_bool();
  const JsonReader contract{in.object("contract")};
  r.contract.rule = contract.text("rule");
  r.contract.bound = contract.bytes("bound");
  r.contract.held = contract.at("held").is_bool() && contract.at("held").get_bool();
  r.contract.verdict = contract.text("verdict");
  const JsonReader samples{in.object("samples")};
  const auto& ms = samples.array("ms");
  std::vector<const boost::json::array*> columns;
  for (const auto& column : kSampleColumns) columns.push_back(&samples.array(column.first));
  for (const auto* column : columns)
    if (column->size() != ms.size()) fail(ErrorCode::bad_input, "profile report: the sample columns differ in length");
  for (std::size_t i = 0; i < ms.size(); ++i) {
    boost::json::object row{{"ms", ms[i]}};
    for (std::size_t c = 0; c < columns.size(); ++c) row[kSampleColumns[c].first] = (*columns[c])[i];
    const JsonReader s{row};
    MemorySample sample;
    sample.ms = s.number("ms");
    for (const auto& [key, member] : kSampleColumns) sample.*member = s.bytes(key);
    r.samples.push_back(sample);
  }
  for (const auto& p : in.array("phases")) {
    if (!p.is_object()) fail(ErrorCode::bad_input, "profile report: a phase is not an object");
    const JsonReader phase{p.get_object()};
    r.phases.push_back({phase.text("name"), phase.number("begin_ms"), phase.number("end_ms")});
  }
  return r;
}

std::string report_to_csv(const Report& r) {
  std::string out = "ms,rss,anon,file,shmem,in_flight\n";
  std::size_t f = 0;
  std::uint64_t in_flight = 0;
  char line[160];
  for (const auto& s : r.samples) {
    // The last in-flight figure reported at or before this sample.
    while (f < r.in_flight.size() && r.in_flight[f].ms <= s.ms) in_flight = r.in_flight[f++].bytes;
    std::snprintf(line, sizeof line, "%.3f,%llu,%llu,%llu,%llu,%llu\n", s.ms, static_cast<unsigned long long>(s.rss),
                  static_cast<unsigned long long>(s.anon), static_cast<unsigned long long>(s.file),
                  static_cast<unsigned long long>(s.shmem), static_cast<unsigned long long>(in_flight));
    out += line;
  }
  return out;
}

}  // namespace lwload::profile
