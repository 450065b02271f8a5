// `lwload profile --loader naive`: the naive loader (bench_baselines.hpp) under the same sampler
// and report as an lwload load, so `profile --compare naive` can draw the two side by side.
#pragma once

#include <chrono>

#include "lwload/manifest.hpp"
#include "lwload/profile.hpp"

namespace lwload::cli {

// Profiles bench::naive_load on `manifest`: phases read / copy / release, ready when every tensor
// has its copy. The contract applied is a direct load's on unified memory (what the naive loader
// promises to be: one host copy of the weights), so its whole-file buffer shows as a violation.
profile::Report profile_naive(const Manifest& manifest, std::chrono::microseconds period);

}  // namespace lwload::cli
