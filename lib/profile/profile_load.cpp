// A profiled load: baseline after device initialisation, the load (and optional verify) under the
// sampler with the loader's events on the timeline, then the contract check. Also `measure`, the
// same baseline/peak discipline around any piece of work (the benchmarks' variants).
#include <unistd.h>

#include <filesystem>

#include "lwload/error.hpp"
#include "lwload/profile.hpp"

namespace lwload::profile {
namespace {

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Mapped bytes the zero_copy tensors do not account for: whole pages at each region's ends and
// the padding between its tensors (the plan's page spans).
std::uint64_t page_rounding(const Plan& plan, const Manifest& manifest) {
  std::uint64_t mapped = 0;
  for (const ImportRegion& r : plan.regions)
    if (r.imported()) mapped += r.map_length;
  const std::uint64_t tensors = plan.bytes(Placement::zero_copy, manifest);
  return mapped > tensors ? mapped - tensors : 0;
}

// Loader events → timeline. A phase event marks the start of that phase (and the end of the one
// before); "done" only ends. Every chunk event carries the bytes in flight.
class EventRecorder {
 public:
  explicit EventRecorder(Timeline& timeline) : timeline_(timeline) {}

  void operator()(const LoadEvent& e) {
    switch (e.kind) {
      case LoadEvent::Kind::phase:
        if (!current_.empty()) timeline_.phase_end(current_, e.time);
        current_ = e.phase == "done" ? std::string() : std::string(e.phase);
        if (!current_.empty()) timeline_.phase_begin(current_, e.time);
        break;
      case LoadEvent::Kind::tensor_start: timeline_.tensor_begin(e.tensor, e.bytes, e.time); break;
      case LoadEvent::Kind::tensor_end: timeline_.tensor_end(e.tensor, e.time); break;
      case LoadEvent::Kind::bytes_read:
      case LoadEvent::Kind::bytes_uploaded: timeline_.in_flight(e.in_flight, e.time); break;
    }
  }

  void close(Clock::time_point t) {
    if (!current_.empty()) timeline_.phase_end(current_, t);
    current_.clear();
  }

 private:
  Timeline& timeline_;
  std::string current_;
};

std::string placement_label(const Plan& plan) {
  std::size_t kinds = 0;
  std::string only, mixed;
  for (const Placement p : {Placement::zero_copy, Placement::direct, Placement::staged, Placement::skipped}) {
    const std::size_t n = plan.count(p);
    if (n == 0 || p == Placement::skipped) continue;
    ++kinds;
    only = std::string(placement_name(p));
    mixed += str(mixed.empty() ? "" : ", ", n, " ", placement_name(p));
  }
  if (kinds == 0) return "none";
  return kinds == 1 ? only : "mixed (" + mixed + ")";
}

}  // namespace

Measurement measure(const std::function<void()>& body, std::chrono::microseconds period) {
  MemorySampler sampler(period);
  Measurement m;
  m.hwm_exact = reset_peak_rss();
  sampler.start();
  m.baseline = read_memory_now();
  const auto begin = Clock::now();
  body();
  m.seconds = seconds_between(begin, Clock::now());
  sampler.stop();
  m.peak = sampler.peak();
  if (m.hwm_exact) m.peak.rss = std::max(m.peak.rss, m.peak.hwm);
  return m;
}

Report profile_load(const Manifest& manifest, Device& device, const ProfileOptions& options) {
  const DeviceInfo& info = device.info();
  // Planning is pure computation; doing it before the baseline keeps the numbers about the load.
  PlanOptions plan_options = options.load.plan;
  plan_options.lazy = plan_options.lazy || options.load.lazy;
  Plan plan = make_plan(manifest, info, plan_options);

  Report report;
  report.model = manifest.files.empty() ? std::string("?") : manifest.files.front().filename().string();
  report.format = manifest.format;
  report.device = info.id() + " (" + info.name + ")";
  report.memory = std::string(memory_model_name(info.memory));
  report.placement = placement_label(plan);
  report.tensor_count = plan.tensors.size();
  report.model_bytes = plan.model_bytes;
  report.largest_tensor = plan.largest_tensor;
  for (std::size_t i = 0; i < plan.tensors.size() && report.largest_tensor_name.empty(); ++i)
    if (plan.tensors[i].placement != Placement::skipped && manifest.tensors[i].bytes == plan.largest_tensor)
      report.largest_tensor_name = manifest.tensors[i].name;
  report.staging_budget = plan.staging_budget;
  report.period_ms = std::chrono::duration<double, std::milli>(options.period).count();

  ContractInputs& in = report.inputs;
  in.memory = info.memory;
  in.model_bytes = plan.model_bytes;
  in.largest_tensor = plan.largest_tensor;
  in.staging_budget = plan.staging_budget;
  in.device_buffers_in_process =
      options.device_buffers_in_process.value_or(info.kind == DeviceKind::cpu || info.backend == "host");

  MemorySampler sampler(options.period);
  Timeline timeline(sampler.origin());
  EventRecorder recorder(timeline);
  LoadOptions load_options = options.load;
  const auto chained = options.load.on_event;
  load_options.on_event = [&recorder, chained](const LoadEvent& e) {
    recorder(e);
    if (chained) chained(e);
  };

  // The Weights keep their own manifest; copied here, before the baseline, and moved in, so a
  // header of a million tensors does not count its copy against the load.
  Manifest for_weights = manifest;
  report.pss_baseline = read_pss_now();
  const bool hwm_exact = reset_peak_rss();
  sampler.start();
  const MemorySample baseline = read_memory_now();
  const auto begin = Clock::now();
  {
    Weights weights = load(std::move(for_weights), device, std::move(plan), load_options);
    const auto loaded = Clock::now();
    report.load_ms = std::chrono::duration<double, std::milli>(loaded - begin).count();
    recorder.close(loaded);
    // The plan as executed (a declined import became direct) decides the contract.
    const Plan& done = weights.plan();
    in.zero_copy_bytes = done.bytes(Placement::zero_copy, manifest);
    in.direct_bytes = done.bytes(Placement::direct, manifest);
    in.staged_bytes = done.bytes(Placement::staged, manifest);
    report.placement = placement_label(done);
    in.page_rounding = page_rounding(done, manifest);
    in.resident_bytes = weights.stats().resident_bytes;
    in.lazy = load_options.lazy || done.options.lazy;
    in.host = done.host;
    in.tensor_count = done.tensors.size() - done.count(Placement::skipped);
    report.populate_ms = weights.stats().populate_seconds * 1000;
    report.io_engine = std::string(io_engine_name(done.schedule.engine));  // as run: the executed plan
    report.direct_io = done.direct_io;
    // Stop sampling before verify and before the weights go: the contract is about the load, and
    // verify's read-back buffers and file reads are not part of it.
    sampler.stop();
    report.pss_loaded = read_pss_now();
    if (options.verify) {
      timeline.phase_begin("verify", Clock::now());
      verify(weights);
      timeline.phase_end("verify", Clock::now());
    }
  }
  const auto end = Clock::now();
  report.samples = sampler.samples();
  report.phases = timeline.phases(end);
  report.tensors = timeline.tensors(end);
  report.in_flight = timeline.in_flight_points();
  report.max_in_flight = timeline.max_in_flight();
  report.load_begin_ms = sampler.ms_since_origin(begin);
  finish_report(report, baseline, sampler.peak(), hwm_exact);
  return report;
}

}  // namespace lwload::profile
