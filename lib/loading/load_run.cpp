#include "loading/load_run.hpp"

#include "io/kernel_features.hpp"
#include "io/page_cache.hpp"

#include <algorithm>

#include "loading/residency.hpp"
#include "loading/setup.hpp"

namespace lwload::loading {

using Clock = std::chrono::steady_clock;

LoadRun::LoadRun(Manifest manifest, Device& device, Plan plan, const LoadOptions& options, Clock::time_point called)
    : device_(device),
      options_(options),
      called_(called),
      start_(Clock::now()),
      state_(std::make_unique<Weights::State>()) {
  state_->manifest = std::move(manifest);
  state_->plan = std::move(plan);
  state_->device = device.info();
  state_->file_system = state_->manifest.file_system ? state_->manifest.file_system : posix_file_system();
}

void LoadRun::import_regions() {
  if (state_->plan.count(Placement::zero_copy) == 0) return;
  progress_->phase("import");
  regions_ = loading::import_regions(*state_, device_, !options_.lazy);  // re-plans where the device declined
}

// Zero-copy tensors are on the device once imported; "ready" waits until their pages are
// resident too, unless the caller asked for lazy (or the plan was made lazy: then its evictable
// pages were not required to fit the machine, and populating them would push them out again).
void LoadRun::populate_zero_copy() {
  const Plan& plan = state_->plan;
  if (plan.count(Placement::zero_copy) == 0) return;
  state_->stats.zero_copy_bytes = plan.bytes(Placement::zero_copy, state_->manifest);
  const auto start = [this](std::size_t tensor) { progress_->start(tensor); };
  const auto done = [this](std::size_t tensor, std::uint64_t bytes) {
    if (progress_->arrived(tensor, bytes)) progress_->ready(tensor);
  };
  if (options_.lazy || plan.options.lazy) {
    for (std::size_t i = 0; i < plan.tensors.size(); ++i) {
      if (plan.tensors[i].placement != Placement::zero_copy) continue;
      progress_->check_cancel();  // nothing is read here, but a ready callback may cancel
      start(i);
      done(i, state_->manifest.tensors[i].bytes);
    }
    return;
  }
  progress_->phase("populate");
  const auto begin = Clock::now();
  make_resident(plan, state_->manifest, regions_,
                {.started = start, .done = done, .check_cancel = [this] { progress_->check_cancel(); }});
  state_->stats.populate_seconds = std::chrono::duration<double>(Clock::now() - begin).count();
}

// What is resident at ready, of the tensors' bytes (regions also map the bytes around them). A
// file mapping's page is resident exactly when it is in the page cache, so one cachestat per region
// counts it (the kernel skips what is not cached) instead of mincore's byte per page (370 ms for a
// 28 GiB lazy load, most of its time to ready). Kernels before 6.5 have no such call, and there
// the count costs no walk either: population has just made every page of each region resident
// (it throws otherwise), so that is the count; a lazy load samples a bounded number of pages per
// region (io::count_cached).
void LoadRun::count_resident() {
  LoadStats& stats = state_->stats;
  const bool populated = !options_.lazy && !state_->plan.options.lazy;
  const bool counted = io::cachestat().available;
  stats.resident_count = counted || !populated ? ResidentCount::counted : ResidentCount::populated;
  for (std::size_t r = 0; r < regions_.size(); ++r) {
    if (!regions_[r].mapping) continue;
    const ImportRegion& planned = state_->plan.regions[r];
    if (stats.resident_count == ResidentCount::populated) {
      stats.resident_bytes += planned.used;
      continue;
    }
    const auto& file = state_->files.at(planned.file);
    if (!file) {
      stats.resident_bytes += regions_[r].mapping->resident_bytes();  // not a file the kernel caches (memory)
      continue;
    }
    const io::CachedCount cached = io::count_cached(*file, planned.offset, planned.used);
    stats.resident_bytes += cached.bytes;
    if (!cached.exact()) stats.resident_count = ResidentCount::sampled;
  }
  stats.resident_bytes = std::min(stats.resident_bytes, stats.zero_copy_bytes);
}

Weights LoadRun::run() {
  progress_ = std::make_unique<Progress>(*state_, options_);
  progress_->check_cancel();  // cancelled before it started: open, map and import nothing
  open_files(*state_);
  check_extents(*state_);
  check_unchanged(*state_);
  import_regions();
  progress_->phase("allocate");
  make_handles(*state_, regions_);
  allocate_buffers(*state_, device_);
  pipeline_.emplace(*state_, device_, *progress_);
  state_->stats.allocate_seconds = std::chrono::duration<double>(Clock::now() - start_).count();

  populate_zero_copy();
  progress_->phase("read");
  pipeline_->run();
  pipeline_.reset();

  count_resident();
  state_->stats.resident_bytes = std::min(state_->stats.resident_bytes, state_->stats.zero_copy_bytes);
  progress_->phase("done");
  state_->stats.seconds = std::chrono::duration<double>(Clock::now() - called_).count();
  return Weights(std::move(state_));
}

}  // namespace lwload::loading
