// The zero-copy limit `lwload bench` compares against: map each model file and make every page
// resident (MADV_POPULATE_READ through the FileSystem seam, or MAP_POPULATE where the kernel lacks
// it; no MADV_WILLNEED before it), nothing else — what a zero-copy loader whose "ready" means
// "resident" cannot beat.
#include "bench_baselines.hpp"

#include <memory>
#include <vector>

#include "lwload/error.hpp"

namespace lwload::bench {

std::uint64_t map_and_populate(const Manifest& manifest, FileSystem& fs, const Ready& ready) {
  std::uint64_t total = 0;
  std::vector<std::shared_ptr<const FileMapping>> mappings;  // unmapped after `ready`, as lwload's are
  for (const auto& path : manifest.files) {
    const auto file = fs.open(path);
    const std::uint64_t size = file->size();
    if (size == 0) continue;
    mappings.push_back(file->map(0, size, MapAccess::resident));
    if (!mappings.back()) fail(ErrorCode::unsupported, path.string(), ": this file system cannot map files");
    mappings.back()->make_resident(0, size);  // one MADV_POPULATE_READ; before 5.14 MAP_POPULATE when mapped
    total += size;
  }
  if (ready) ready();
  return total;
}

}  // namespace lwload::bench
