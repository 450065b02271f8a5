// "Ready means resident": before a zero_copy tensor is reported ready, the pages under it are read
// from the file and mapped, so the device's first use does not stall on page faults (or on a cold
// disk). Each region is hinted whole (MADV_WILLNEED), then populated in chunks, so ready
// callbacks stream while later pages are still arriving.
#pragma once

#include "loading/layer.hpp"

#include <functional>
#include <vector>

#include "loading/region_imports.hpp"

namespace lwload::loading {

struct ResidencyCallbacks {
  std::function<void(std::size_t tensor)> started;                    // its first page is requested
  std::function<void(std::size_t tensor, std::uint64_t bytes)> done;  // its pages are resident
  std::function<void()> check_cancel;                                 // throws to stop
};

// Populates the imported regions of `plan` (one ImportedRegion each), calling back per tensor.
// Throws Error(io) naming the file and tensor when pages cannot be read (a truncated file).
void make_resident(const Plan& plan, const Manifest& manifest, const std::vector<ImportedRegion>& regions,
                   const ResidencyCallbacks& callbacks);

}  // namespace lwload::loading
