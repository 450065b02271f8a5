// The backends compiled into this build, registered by BackendRegistry on first use.
#pragma once

#include "backends/layer.hpp"

#include <memory>
#include <vector>

#include "lwload/backend.hpp"

namespace lwload {

std::vector<std::shared_ptr<Backend>> builtin_backends();

std::shared_ptr<Backend> make_host_backend();
std::shared_ptr<Backend> make_null_backend();
std::shared_ptr<Backend> make_cuda_backend();  // always built: the driver is loaded at run time
#if LWLOAD_HAVE_OPENCL
std::shared_ptr<Backend> make_opencl_backend();
#endif
#if LWLOAD_HAVE_LEVEL_ZERO
std::shared_ptr<Backend> make_level_zero_backend();
#endif
#if LWLOAD_HAVE_VULKAN
std::shared_ptr<Backend> make_vulkan_backend();
#endif
#if LWLOAD_HAVE_XRT
std::shared_ptr<Backend> make_xrt_backend();
#endif

}  // namespace lwload
