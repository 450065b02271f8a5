// The C constructors of the backends this build lacks: each answers LWLOAD_UNSUPPORTED, so
// liblwload exports every LWLOAD_1 symbol whichever backends it was built with. The constructors
// of the backends it has are their own (backends/<backend>/capi.cpp).
#include "lwload/backend_impl.hpp"
#include "lwload/error.hpp"
#include "lwload/lwload.h"

namespace {

[[maybe_unused]] lwload_device* not_built(lwload_error** err, const char* api) {
  return lwload::c_api_device(err, [&]() -> std::unique_ptr<lwload::Device> {
    lwload::fail(lwload::ErrorCode::unsupported, "this liblwload was built without ", api);
  });
}

}  // namespace

extern "C" {

#if !LWLOAD_HAVE_OPENCL
lwload_device* lwload_device_from_opencl(void*, void*, void*, lwload_error** err) { return not_built(err, "OpenCL"); }
#endif

#if !LWLOAD_HAVE_LEVEL_ZERO
lwload_device* lwload_device_from_level_zero(void*, void*, void*, lwload_error** err) {
  return not_built(err, "Level Zero");
}
#endif

#if !LWLOAD_HAVE_VULKAN
lwload_device* lwload_device_from_vulkan(void*, void*, void*, uint32_t, lwload_error** err) {
  return not_built(err, "Vulkan");
}
#endif

#if !LWLOAD_HAVE_XRT
lwload_device* lwload_device_from_xrt(void*, lwload_error** err) { return not_built(err, "XRT"); }
#endif

}  // extern "C"
