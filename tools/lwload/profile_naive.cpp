// The naive loader, profiled (see profile_naive.hpp).
#include "profile_naive.hpp"

#include "bench_baselines.hpp"
#include "profile_baseline.hpp"
#include "lwload/file_system.hpp"

namespace lwload::cli {

profile::Report profile_naive(const Manifest& manifest, std::chrono::microseconds period) {
  using profile::Clock;
  profile::Report report = baseline_report(manifest, "host memory (naive read + copy)", "naive", "read", period);
  const auto fs = posix_file_system();
  profile::MemorySampler sampler(period);
  profile::Timeline timeline(sampler.origin());
  BaselineRun run;
  const auto on_step = [&](bench::NaiveStep step) {
    const auto now = Clock::now();
    switch (step) {
      case bench::NaiveStep::read: timeline.phase_begin("read", now); break;
      case bench::NaiveStep::copy:
        timeline.phase_end("read", now);
        timeline.phase_begin("copy", now);
        break;
      case bench::NaiveStep::ready:  // every copy made, the whole-file buffer still held: the peak
        timeline.phase_end("copy", now);
        run.ready = now;
        run.at_ready = profile::read_memory_now();
        run.at_ready.ms = sampler.ms_since_origin(now);
        timeline.phase_begin("release", Clock::now());
        break;
      case bench::NaiveStep::released: timeline.phase_end("release", now); break;
    }
  };

  report.pss_baseline = profile::read_pss_now();
  run.hwm_exact = profile::reset_peak_rss();
  sampler.start();
  run.baseline = profile::read_memory_now();
  run.begin = Clock::now();
  bench::naive_load(manifest, *fs, on_step);
  sampler.stop();
  run.end = Clock::now();
  finish_baseline_report(report, sampler, timeline, run);
  return report;
}

}  // namespace lwload::cli
