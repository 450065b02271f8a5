// `lwload profile --loader ggml` (and the "ggml" row of --compare): ggml's own loading, profiled
// as lwload's is — what a ggml application does today (gguf_init_from_file with no_alloc,
// ggml_backend_alloc_ctx_tensors_from_buft on the device's buffer type, then a read of each
// tensor's bytes and ggml_backend_tensor_set). Built when ggml is (-Dggml).
#pragma once

#include <chrono>
#include <string>

#include "lwload/manifest.hpp"
#include "lwload/profile.hpp"

namespace lwload::cli {

// Whether this lwload was built with ggml (the loader is offered only then).
bool ggml_loader_available() noexcept;

// Profiles ggml's loading of the GGUF at `path` (`manifest` is its lwload manifest, for the model
// figures) on the ggml device matching `device`: "vulkan[:N]" is ggml's Vulkan device N, anything
// else ggml's CPU device. Phases: header, allocate, upload; ready when every tensor is set.
// Error(unsupported) for a model that is not GGUF (ggml reads no other format).
profile::Report profile_ggml(const std::string& path, const Manifest& manifest, const std::string& device,
                             std::chrono::microseconds period);

}  // namespace lwload::cli
