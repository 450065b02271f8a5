// The baseline loaders' shared report code (see profile_baseline.hpp).
#include "profile_baseline.hpp"

#include <algorithm>
#include <utility>

namespace lwload::cli {

profile::Report baseline_report(const Manifest& manifest, std::string device, std::string placement,
                                std::string io_engine, std::chrono::microseconds period) {
  profile::Report report;
  report.format = manifest.format;
  report.device = std::move(device);
  report.memory = "unified";
  report.placement = std::move(placement);
  report.io_engine = std::move(io_engine);
  report.tensor_count = manifest.tensors.size();
  report.model_bytes = manifest.total_bytes();
  report.largest_tensor = manifest.largest_tensor_bytes();
  for (const auto& t : manifest.tensors)
    if (t.bytes == report.largest_tensor && report.largest_tensor_name.empty()) report.largest_tensor_name = t.name;
  report.period_ms = std::chrono::duration<double, std::milli>(period).count();
  profile::ContractInputs& in = report.inputs;
  in.memory = MemoryModel::unified;
  in.model_bytes = report.model_bytes;
  in.largest_tensor = report.largest_tensor;
  in.direct_bytes = report.model_bytes;
  in.device_buffers_in_process = true;
  return report;
}

void finish_baseline_report(profile::Report& report, const profile::MemorySampler& sampler,
                            const profile::Timeline& timeline, const BaselineRun& run) {
  report.load_begin_ms = sampler.ms_since_origin(run.begin);
  report.load_ms = std::chrono::duration<double, std::milli>(run.ready - run.begin).count();
  report.samples = sampler.samples();
  const auto at = std::lower_bound(report.samples.begin(), report.samples.end(), run.at_ready.ms,
                                   [](const profile::MemorySample& s, double ms) { return s.ms < ms; });
  report.samples.insert(at, run.at_ready);
  report.phases = timeline.phases(run.end);
  profile::MemorySample peak = sampler.peak();
  peak.rss = std::max(peak.rss, run.at_ready.rss);
  peak.anon = std::max(peak.anon, run.at_ready.anon);
  peak.file = std::max(peak.file, run.at_ready.file);
  peak.shmem = std::max(peak.shmem, run.at_ready.shmem);
  profile::finish_report(report, run.baseline, peak, run.hwm_exact);
}

profile::Report run_engine_load(profile::Report report, std::chrono::microseconds period,
                                const std::function<std::shared_ptr<void>(profile::Timeline&)>& load) {
  using profile::Clock;
  profile::MemorySampler sampler(period);
  profile::Timeline timeline(sampler.origin());
  BaselineRun run;
  report.pss_baseline = profile::read_pss_now();
  run.hwm_exact = profile::reset_peak_rss();
  sampler.start();
  run.baseline = profile::read_memory_now();
  run.begin = Clock::now();
  {
    const std::shared_ptr<void> weights = load(timeline);
    run.ready = Clock::now();
    run.at_ready = profile::read_memory_now();
    run.at_ready.ms = sampler.ms_since_origin(run.ready);
    timeline.phase_begin("release", Clock::now());
  }
  sampler.stop();
  run.end = Clock::now();
  timeline.phase_end("release", run.end);
  finish_baseline_report(report, sampler, timeline, run);
  return report;
}

}  // namespace lwload::cli
