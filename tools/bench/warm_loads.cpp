// Warm zero-copy loads on the host device, several in one process: what a refusal costs each load
// once the process has met it, without an exec, a process's first faults or its exit in the
// figure. scripts/bench/refusals.sh builds it against the build's liblwload and runs it under
// each refusal (tests/support/refuse.c):
//   bench-warm-loads MODEL LOADS
// prints one line per load after the first: the wall time of the load() call (the plan included,
// to every tensor ready) and the process CPU time (user + system, all threads) it took. Timed
// here, not read from LoadStats, so builds that count differently compare alike.
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "lwload/backend.hpp"
#include "lwload/loader.hpp"
#include "lwload/manifest.hpp"

namespace {

double cpu_seconds() {
  timespec t{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: bench-warm-loads MODEL LOADS\n");
    return 2;
  }
  try {
    const lwload::Manifest manifest = lwload::open_manifest(argv[1]);
    auto device = lwload::open_device("host");
    lwload::LoadOptions options;
    options.plan.force = lwload::Placement::zero_copy;
    const int loads = std::atoi(argv[2]);
    for (int i = 0; i <= loads; ++i) {  // load 0 meets the process's first-time costs: not printed
      const double cpu = cpu_seconds();
      const auto start = std::chrono::steady_clock::now();
      const lwload::Weights weights = lwload::load(manifest, *device, options);
      const std::chrono::duration<double> wall = std::chrono::steady_clock::now() - start;
      const double spent = cpu_seconds() - cpu;
      if (i > 0) std::printf("%.9f %.9f\n", wall.count(), spent);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench-warm-loads: %s\n", e.what());
    return 1;
  }
  return 0;
}
