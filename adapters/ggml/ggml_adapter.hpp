// What the adapter's files share and applications need not see.
#pragma once

#include <cstdint>

#include "lwload/ggml.hpp"

namespace lwload::ggml {

// Tells a device of open_device how many bytes of allocations the load is about to ask for, so its
// shared buffers are sized to hold them (ggml_arena.hpp). Other devices: nothing.
void expect_allocations(Device& device, std::uint64_t bytes) noexcept;

// The rule for names that leave lwload for ggml, which reads them as C strings and keeps at most
// GGML_MAX_NAME - 1 bytes: every tensor `plan` loads must be named in ggml as itself, distinct
// from every other. Throws Error(unsupported) naming the first that cannot be (a NUL byte, too
// long), before anything is read.
void check_names(const Manifest& manifest, const Plan& plan);

}  // namespace lwload::ggml
