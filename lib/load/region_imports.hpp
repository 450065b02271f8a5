// Zero-copy setup: each ImportRegion of the plan is mapped through the file's own map() and handed
// to Device::import_host. The device's refusals are collected and given to the planner in one
// re-plan (replan_declined), so the plan the loader goes on executing is the planner's, never an
// edit of the loader's own.
#pragma once

#include <memory>
#include <vector>

#include "load/weights_state.hpp"

namespace lwload::loading {

struct ImportedRegion {
  std::shared_ptr<const FileMapping> mapping;  // also owned by Weights::State::mappings
  std::size_t buffer = 0;                      // index into Weights::State::buffers
};

// Maps and imports every region of state.plan (files: per manifest file, opened where needed).
// Returns one entry per region of the re-planned plan, in its order. Throws what the device throws
// for real failures; refusals become direct (or staged) tensors with the device's reason.
std::vector<ImportedRegion> import_regions(Weights::State& state, Device& device,
                                           const OpenFiles& files);

}  // namespace lwload::loading
