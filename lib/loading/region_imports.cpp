#include "loading/region_imports.hpp"

#include <algorithm>

#include "lwload/error.hpp"

namespace lwload::loading {

std::vector<ImportedRegion> import_regions(Weights::State& state, Device& device, bool resident) {
  Plan& plan = state.plan;
  std::vector<ImportedRegion> imported(plan.regions.size());
  std::vector<DeclinedRegion> declined;
  for (std::size_t r = 0; r < plan.regions.size(); ++r) {
    const ImportRegion& region = plan.regions[r];
    if (!region.imported()) continue;
    // The pages the plan says, [map_offset, +map_length): the last one may pass the file's end,
    // which mmap maps whole and map() leaves out of its range.
    const RandomAccessFile& file = *state.files.at(region.file);
    const std::uint64_t in_file = std::min(region.map_length, file.size() - region.map_offset);
    auto mapping = file.map(region.map_offset, in_file, resident ? MapAccess::resident : MapAccess::normal);
    if (!mapping) {
      declined.push_back({r, "the file cannot be mapped"});
      continue;
    }
    // The planner checked that `length` lies within those pages.
    const std::byte* start = mapping->bytes().data() + (region.offset - region.map_offset);
    ImportResult result = device.import_host(std::span<const std::byte>(start, region.length));
    if (!result.buffer) {
      declined.push_back(
          {r, "the device declined the import" + (result.declined.empty() ? "" : ": " + result.declined)});
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
