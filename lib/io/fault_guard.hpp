// Reading mapped file pages without dying when the file shrinks under the mapping. A truncated
// file turns an access to its lost pages into SIGBUS; these functions catch that one signal on
// the calling thread and report it as a value, so lwload's own reads through mappings (page
// population fallback, verify) become clean errors. Applications reading zero-copy tensors are
// not covered: their accesses fault as with any mmap loader (README, "Zero-copy and truncation").
#pragma once

#include <cstddef>

namespace lwload::io {

// memcpy(dst, src, n); false when a page of src could not be read (SIGBUS).
bool copy_guarded(void* dst, const void* src, std::size_t n) noexcept;

// Reads one byte in every `stride` of [begin, begin + n) (faulting the pages in); false on SIGBUS.
bool touch_guarded(const void* begin, std::size_t n, std::size_t stride) noexcept;

}  // namespace lwload::io
