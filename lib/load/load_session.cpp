#include "load/load_session.hpp"

#include <algorithm>

#include "load/residency.hpp"
#include "load/setup.hpp"

namespace lwload::loading {

using Clock = std::chrono::steady_clock;

LoadSession::LoadSession(Manifest manifest, Device& device, Plan plan, const LoadOptions& options)
    : device_(device), options_(options), start_(Clock::now()), state_(std::make_unique<Weights::State>()) {
  state_->manifest = std::move(manifest);
  state_->plan = std::move(plan);
  state_->device = device.info();
  state_->file_system = state_->manifest.file_system ? state_->manifest.file_system : posix_file_system();
  tensor_buffer_.assign(state_->plan.tensors.size(), kNoBuffer);
}

void LoadSession::import_regions() {
  if (state_->plan.regions.empty()) return;
  progress_->phase("import");
  regions_ = loading::import_regions(*state_, device_, state_->files);
  const Plan& plan = state_->plan;  // re-planned where the device declined
  for (std::size_t e = 0; e < plan.tensors.size(); ++e)
    if (plan.tensors[e].placement == Placement::zero_copy) tensor_buffer_[e] = regions_[plan.tensors[e].region].buffer;
}

// Zero-copy tensors are on the device once imported; "ready" waits until their pages are
// resident too, unless the caller asked for lazy.
void LoadSession::populate_zero_copy() {
  const Plan& plan = state_->plan;
  if (plan.regions.empty()) return;
  state_->stats.zero_copy_bytes = plan.bytes(Placement::zero_copy, state_->manifest);
  const auto start = [this](Entry e) { progress_->start(e); };
  const auto done = [this](Entry e, std::uint64_t bytes) {
    if (progress_->arrived(e, bytes)) progress_->ready(e);
  };
  if (options_.lazy) {
    for (std::size_t e = 0; e < plan.tensors.size(); ++e) {
      if (plan.tensors[e].placement != Placement::zero_copy) continue;
      progress_->check_cancel();  // nothing is read here, but a ready callback may cancel
      start(Entry{e});
      done(Entry{e}, state_->manifest.tensors[plan.tensors[e].tensor].bytes);
    }
    return;
  }
  progress_->phase("populate");
  const auto begin = Clock::now();
  make_resident(plan, state_->manifest, regions_,
                {.started = start, .done = done, .check_cancel = [this] { progress_->check_cancel(); }});
  state_->stats.populate_seconds = std::chrono::duration<double>(Clock::now() - begin).count();
}

Weights LoadSession::run() {
  progress_ = std::make_unique<Progress>(*state_, options_);
  progress_->check_cancel();  // cancelled before it started: open, map and import nothing
  open_files(*state_);
  check_extents(*state_, state_->files);
  check_unchanged(*state_);
  import_regions();
  progress_->phase("allocate");
  allocate_buffers(*state_, device_, tensor_buffer_);
  pipeline_.emplace(*state_, device_, *progress_, options_, state_->files, tensor_buffer_);
  make_handles(*state_, tensor_buffer_);
  state_->stats.allocate_seconds = std::chrono::duration<double>(Clock::now() - start_).count();

  populate_zero_copy();
  progress_->phase("read");
  pipeline_->run();
  pipeline_.reset();

  // Regions also map the bytes around their tensors (headers, padding): count at most the tensors'.
  for (const ImportedRegion& region : regions_) state_->stats.resident_bytes += region.mapping->resident_bytes();
  state_->stats.resident_bytes = std::min(state_->stats.resident_bytes, state_->stats.zero_copy_bytes);
  progress_->phase("done");
  state_->stats.seconds = std::chrono::duration<double>(Clock::now() - start_).count();
  return Weights(std::move(state_));
}

}  // namespace lwload::loading
