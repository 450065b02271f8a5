// One run of the loader, top to bottom: open the files, import the zero_copy regions (the planner
// re-plans what the device declines), allocate everything else and the staging ring, make the
// handles — all before a byte moves — then make zero_copy pages resident and move the direct and
// staged bytes as the plan's schedule says. Each step is a small part with one job (setup.hpp, region_imports.hpp,
// residency.hpp, pipeline.hpp); Progress is the one voice the application hears. On any failure
// the parts drain and release what they made, and nothing is handed out.
#pragma once

#include "loading/layer.hpp"

#include <chrono>
#include <memory>
#include <optional>
#include <vector>

#include "loading/pipeline.hpp"
#include "loading/progress.hpp"
#include "loading/region_imports.hpp"
#include "loading/weights_state.hpp"
#include "lwload/loader.hpp"

namespace lwload::loading {

class LoadRun {
 public:
  // `called`: when load() was called, so LoadStats::seconds counts the planning (the page-cache
  // probe among it) as the caller's wait does.
  LoadRun(Manifest manifest, Device& device, Plan plan, const LoadOptions& options,
          std::chrono::steady_clock::time_point called);
  LoadRun(const LoadRun&) = delete;
  LoadRun& operator=(const LoadRun&) = delete;

  Weights run();

 private:
  void import_regions();
  void populate_zero_copy();
  void count_resident();

  Device& device_;
  const LoadOptions& options_;
  std::chrono::steady_clock::time_point called_, start_;
  std::unique_ptr<Weights::State> state_;
  std::unique_ptr<Progress> progress_;
  std::vector<ImportedRegion> regions_;   // per Plan::regions entry
  std::optional<DataPipeline> pipeline_;  // last: drained before the rest goes
};

}  // namespace lwload::loading
