#include "loading/region_imports.hpp"

#include "lwload/error.hpp"

namespace lwload::loading {

std::vector<ImportedRegion> import_regions(Weights::State& state, Device& device, bool resident) {
  Plan& plan = state.plan;
  std::vector<ImportedRegion> imported(plan.regions.size());
  std::vector<DeclinedRegion> declined;
  for (std::size_t r = 0; r < plan.regions.size(); ++r) {
    const ImportRegion& region = plan.regions[r];
    if (!region.imported()) continue;
    auto mapping = state.files.at(region.file)->map(region.offset, region.used,
                                                        resident ? MapAccess::resident : MapAccess::normal);
    if (!mapping) {
      declined.push_back({r, "the file cannot be mapped"});
      continue;
    }
    // The planner checked that `length` lies within the pages the mapping takes.
    ImportResult result = device.import_host(std::span<const std::byte>(mapping->bytes().data(), region.length));
    if (!result.buffer) {
      declined.push_back({r, "the device declined the import" + (result.declined.empty() ? "" : ": " + result.declined)});
      continue;
    }
    imported[r] = {mapping, result.buffer.get()};
    state.mappings.push_back(std::move(mapping));
    state.buffers.push_back(std::move(result.buffer));
  }
  if (!declined.empty()) replan_declined(plan, state.manifest, state.device, declined);
  return imported;
}

}  // namespace lwload::loading
