// Reading mapped file pages without dying when the file shrinks under the mapping. A truncated
// file turns an access to its lost pages into SIGBUS; these functions let the kernel do the reading
// (fault_guard.cpp), so a lost page is a return value and no signal is raised or handled: lwload
// installs no SIGBUS handler, and the application's own stays in charge. lwload's reads through
// mappings (page population fallback, verify, read-back) become clean errors. Applications reading
// zero-copy tensors are not covered: their accesses fault as with any mmap loader (docs/USAGE.md,
// "Zero-copy on the files people have"); `--placement direct` keeps no mapping.
#pragma once

#include "io/layer.hpp"

#include <cstddef>

namespace lwload::io {

// memcpy(dst, src, n); false when a page of src could not be read (beyond the end of its file).
bool copy_guarded(void* dst, const void* src, std::size_t n) noexcept;

// Reads one byte in every `stride` of [begin, begin + n) (faulting the pages in); false when a
// page could not be read.
bool touch_guarded(const void* begin, std::size_t n, std::size_t stride) noexcept;

}  // namespace lwload::io
