// Whether a ggml device imports host memory, and at what alignment: decided once, when the device
// is opened, from what the device declares and from a probe import — never from its name.
#pragma once

#include <cstdint>
#include <string>

#include <ggml-backend.h>

namespace lwload::ggml {

struct ImportSupport {
  // The device has a buffer_from_host_ptr entry to call. ggml calls it unchecked
  // (ggml_backend_dev_buffer_from_host_ptr), and CUDA, HIP, CANN, RPC and others leave it NULL:
  // when this is false the adapter never calls it.
  bool entry = false;
  bool imports = false;         // a probe import succeeded
  std::uint64_t alignment = 0;  // the smallest alignment (and size multiple) the probe found accepted
  std::string how;              // what was found, in words (`lwload devices` shows it)
};

// With ggml-backend-impl.h (LWLOAD_GGML_BACKEND_IMPL), the entry is read from the device's
// interface table when its registry was built against the same interface version; otherwise only
// a device whose properties say buffer_from_host_ptr is asked. A device with the entry is then
// probed: read-only shared mappings of a memfd, at page-multiple alignments from a page up to
// 1 MiB (a pointer aligned to A but not 2A, A bytes), the first one accepted is the device's
// alignment; none accepted (OpenCL and SYCL answer NULL to every call) means no imports.
ImportSupport probe_import(ggml_backend_dev_t device, const ggml_backend_dev_props& props);

}  // namespace lwload::ggml
