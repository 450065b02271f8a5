// The naive loader, profiled (see profile_naive.hpp).
#include "profile_naive.hpp"

#include <algorithm>

#include "bench_baselines.hpp"
#include "lwload/file_system.hpp"

namespace lwload::cli {

profile::Report profile_naive(const Manifest& manifest, std::chrono::microseconds period) {
  using profile::Clock;
  profile::Report report;
  report.format = manifest.format;
  report.device = "host memory (naive read + copy)";
  report.memory = "unified";
  report.placement = "naive";
  report.io_engine = "read";
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

  const auto fs = posix_file_system();
  profile::MemorySampler sampler(period);
  profile::Timeline timeline(sampler.origin());
  // Read synchronously at `ready`, where the naive loader holds the most: the peak is then in the
  // report whatever the sampling period, not only when a sample happens to land there.
  profile::MemorySample at_ready;
  Clock::time_point ready;
  const auto on_step = [&](bench::NaiveStep step) {
    const auto now = Clock::now();
    switch (step) {
      case bench::NaiveStep::read: timeline.phase_begin("read", now); break;
      case bench::NaiveStep::copy:
        timeline.phase_end("read", now);
        timeline.phase_begin("copy", now);
        break;
      case bench::NaiveStep::ready:
        timeline.phase_end("copy", now);
        ready = now;
        at_ready = profile::read_memory_now();
        at_ready.ms = sampler.ms_since_origin(now);
        timeline.phase_begin("release", Clock::now());
        break;
      case bench::NaiveStep::released: timeline.phase_end("release", now); break;
    }
  };

  report.pss_baseline = profile::read_pss_now();
  const bool hwm_exact = profile::reset_peak_rss();
  sampler.start();
  const profile::MemorySample baseline = profile::read_memory_now();
  const auto begin = Clock::now();
  bench::naive_load(manifest, *fs, on_step);
  sampler.stop();
  const auto end = Clock::now();

  report.load_begin_ms = sampler.ms_since_origin(begin);
  report.load_ms = std::chrono::duration<double, std::milli>(ready - begin).count();
  report.samples = sampler.samples();
  const auto at = std::lower_bound(report.samples.begin(), report.samples.end(), at_ready.ms,
                                   [](const profile::MemorySample& s, double ms) { return s.ms < ms; });
  report.samples.insert(at, at_ready);
  report.phases = timeline.phases(end);
  profile::MemorySample peak = sampler.peak();
  peak.rss = std::max(peak.rss, at_ready.rss);
  peak.anon = std::max(peak.anon, at_ready.anon);
  peak.file = std::max(peak.file, at_ready.file);
  peak.shmem = std::max(peak.shmem, at_ready.shmem);
  profile::finish_report(report, baseline, peak, hwm_exact);
  return report;
}

}  // namespace lwload::cli
