// The backends compiled into this build, and the registry that starts with them.
#include "backends/builtin.hpp"

namespace lwload {

std::vector<std::shared_ptr<Backend>> builtin_backends() {
  std::vector<std::shared_ptr<Backend>> list{make_host_backend(), make_null_backend(), make_cuda_backend()};
#if LWLOAD_HAVE_OPENCL
  list.push_back(make_opencl_backend());
#endif
#if LWLOAD_HAVE_LEVEL_ZERO
  list.push_back(make_level_zero_backend());
#endif
#if LWLOAD_HAVE_VULKAN
  list.push_back(make_vulkan_backend());
#endif
#if LWLOAD_HAVE_XRT
  list.push_back(make_xrt_backend());
#endif
  return list;
}

BackendRegistry& BackendRegistry::instance() {
  static BackendRegistry registry(builtin_backends());
  return registry;
}

}  // namespace lwload
