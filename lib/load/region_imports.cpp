#include "load/region_imports.hpp"

#include "core/align.hpp"
#include "io/mapped_region.hpp"
#include "lwload/error.hpp"

namespace lwload::loading {

std::vector<ImportedRegion> import_regions(Weights::State& state, Device& device,
                                           const OpenFiles& files) {
  Plan& plan = state.plan;
  std::vector<ImportedRegion> imported;
  std::vector<DeclinedRegion> declined;
  const std::uint64_t page = page_size();
  for (std::size_t r = 0; r < plan.regions.size(); ++r) {
    const ImportRegion& region = plan.regions[r];
    const RandomAccessFile& file = *files.at(region.file);
    auto mapping = file.map(region.offset, region.used);
    if (!mapping) {
      declined.push_back({r, "the file cannot be mapped"});
      continue;
    }
    // mmap maps whole pages: an import rounded up to the size multiple must stay inside them.
    const std::uint64_t head = region.offset % page;
    const std::uint64_t mapped = align_up(head + region.used, page) - head;
    if (region.length > mapped) {
      declined.push_back({r, str("import size ", region.length, " exceeds the ", mapped, " mapped bytes")});
      continue;
    }
    ImportResult result = device.import_host(std::span<const std::byte>(mapping->bytes().data(), region.length));
    if (!result.buffer) {
      declined.push_back({r, "the device declined the import" + (result.declined.empty() ? "" : ": " + result.declined)});
      continue;
    }
    imported.push_back({mapping, state.buffers.size()});
    state.mappings.push_back(std::move(mapping));
    state.buffers.push_back(std::move(result.buffer));
  }
  if (!declined.empty()) replan_declined(plan, state.manifest, state.device, declined);
  return imported;  // the kept regions, in their (unchanged) relative order = the new numbering
}

}  // namespace lwload::loading
