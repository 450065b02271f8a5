// What the baseline loaders' profiles share (profile_naive, profile_ggml, profile_ort): the report's model figures
// and a one-host-copy contract, and the finish — samples, the sample read synchronously at `ready`
// (the peak is then in the report whatever the sampling period), phases and figures.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "lwload/manifest.hpp"
#include "lwload/profile.hpp"

namespace lwload::cli {

// A report on `manifest` for a loader that holds one copy of the weights in host memory.
profile::Report baseline_report(const Manifest& manifest, std::string device, std::string placement,
                                std::string io_engine, std::chrono::microseconds period);

// Where a baseline load stood: when it began and became ready, and the memory then.
struct BaselineRun {
  profile::MemorySample baseline;  // before the load
  profile::MemorySample at_ready;  // read synchronously at `ready` (its ms set by the caller)
  profile::Clock::time_point begin, ready, end;
  bool hwm_exact = false;
};

// Fills the report from a stopped sampler, the timeline and `run`.
void finish_baseline_report(profile::Report& report, const profile::MemorySampler& sampler,
                            const profile::Timeline& timeline, const BaselineRun& run);

// An engine's own load (profile_ggml, profile_ort), profiled as lwload's is: the sampler starts,
// `load` loads, marking its phases on the timeline, and returns what holds the weights; the load
// is ready when it returns (the memory is read then), and what it returned is released in a
// "release" phase. Returns `report` finished.
profile::Report run_engine_load(profile::Report report, std::chrono::microseconds period,
                                const std::function<std::shared_ptr<void>(profile::Timeline&)>& load);

}  // namespace lwload::cli
