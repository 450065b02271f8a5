// A ggml device the test writes itself (ggml-backend-impl.h), registered with ggml like any backend:
// host memory behind ggml's own buffer API, with the limits real drivers impose and lavapipe does
// not — a buffer_from_host_ptr entry left NULL (CUDA, HIP, CANN, RPC), one that answers NULL
// (OpenCL, SYCL), an import alignment larger than a page, a largest buffer, and a cap on live
// buffers (Vulkan's maxMemoryAllocationCount). Every call is counted, so a test can say what the
// adapter asked for.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <ggml-backend.h>

namespace fake {

struct Config {
  enum class Entry { none, declines, imports };
  Entry entry = Entry::imports;  // what buffer_from_host_ptr is
  bool caps_say_import = false;  // what ggml_backend_dev_get_props' caps.buffer_from_host_ptr says
  bool host_buffers = true;      // the buffer type's is_host (direct placement) or not (staged)
  enum ggml_backend_dev_type type = GGML_BACKEND_DEVICE_TYPE_IGPU;
  std::uint64_t import_alignment = 4096;      // pointer and size of an import must be multiples of it
  std::size_t max_buffer = SIZE_MAX;          // the buffer type's max size
  std::size_t max_live = SIZE_MAX;            // buffers alive at once (allocations and imports)
  std::uint64_t declines_after = UINT64_MAX;  // imports accepted before every later one answers NULL
};

struct Counts {
  std::size_t live = 0, peak_live = 0;  // buffers alive now, and at most
  std::size_t allocations = 0, imports = 0, import_calls = 0;
  std::size_t refused_allocations = 0;  // past max_live or max_buffer
  std::size_t misaligned_imports = 0;   // a pointer or size off the alignment (answered NULL)
  std::size_t oversized_imports = 0;    // larger than max_buffer (answered NULL)
};

// The fake device (registered once, on first use) with `config` applied and the counts reset.
ggml_backend_dev_t device(const Config& config);
const Counts& counts();

}  // namespace fake
