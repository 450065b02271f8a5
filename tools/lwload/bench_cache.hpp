// Page-cache control for `lwload bench`: evict a model's files before a cold repetition and check,
// with cachestat (or mincore), how much of them is still cached (eviction is advice the kernel may not follow).
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

namespace lwload::bench {

// Flushes dirty pages (fdatasync) and asks the kernel to drop the file's cached pages
// (posix_fadvise POSIX_FADV_DONTNEED). Works on any file this process can open for reading; pages
// that another process has mapped or locked stay. Throws Error(io) when the file cannot be opened.
void evict_from_page_cache(const std::filesystem::path& path);

// Fraction (0..1) of the file in the page cache now (io::cached_bytes; faults nothing in).
double cached_fraction(const std::filesystem::path& path);

// The same over several files, weighted by size.
double cached_fraction(std::span<const std::filesystem::path> paths);

}  // namespace lwload::bench
