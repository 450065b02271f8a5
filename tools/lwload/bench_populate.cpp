// The zero-copy limit `lwload bench` compares against: map each model file and make every page
// resident (MADV_POPULATE_READ through the FileSystem seam), nothing else — what a zero-copy
// loader whose "ready" means "resident" cannot beat.
#include "bench_baselines.hpp"

#include "lwload/error.hpp"

namespace lwload::bench {

std::uint64_t map_and_populate(const Manifest& manifest, FileSystem& fs) {
  std::uint64_t total = 0;
  for (const auto& path : manifest.files) {
    const auto file = fs.open(path);
    const std::uint64_t size = file->size();
    const auto mapping = file->map(0, size);
    if (!mapping) fail(ErrorCode::unsupported, path.string(), ": this file system cannot map files");
    mapping->will_need(0, size);
    mapping->make_resident(0, size);
    total += size;
  }
  return total;
}

}  // namespace lwload::bench
