// Zero-copy setup: each imported region of the plan is mapped through the file's own map() and
// handed to Device::import_host, as the plan's geometry says. The device's refusals are collected
// and given to the planner in one re-plan (replan_declined), so the plan the loader goes on
// executing is the planner's, never an edit of the loader's own.
#pragma once

#include "loading/layer.hpp"

#include <memory>
#include <vector>

#include "loading/weights_state.hpp"

namespace lwload::loading {

struct ImportedRegion {
  // The region's pages as the plan gives them: bytes()[0] is the file's byte map_offset. Also
  // owned by Weights::State::mappings.
  std::shared_ptr<const FileMapping> mapping;
  DeviceBuffer* buffer = nullptr;  // owned by Weights::State::buffers; null: declined
};

// Maps and imports every region of state.plan from state.files. Returns one entry per region,
// under the region's own number (declined ones, at plan or at load time, empty). Throws what the
// device throws for real failures; refusals become direct (or staged) tensors with the reason.
// `resident`: the regions will be made resident next (not a lazy load), so they are mapped with
// MapAccess::resident.
std::vector<ImportedRegion> import_regions(Weights::State& state, Device& device, bool resident);

}  // namespace lwload::loading
