// lwload_device_from_xrt: the XRT backend's C constructor, written on the public API as a backend
// outside lwload would write its own (c_api_device, lwload/backend_impl.hpp).
#include <xrt/xrt_device.h>

#include "lwload/backend_impl.hpp"
#include "lwload/error.hpp"
#include "lwload/lwload.h"
#include "lwload/xrt.hpp"

extern "C" lwload_device* lwload_device_from_xrt(void* xrt_device, lwload_error** err) {
  return lwload::c_api_device(err, [&] {
    if (!xrt_device) lwload::fail(lwload::ErrorCode::usage, "lwload_device_from_xrt: xrt_device is NULL");
    // An xrtDeviceHandle (xrtDeviceOpen) names a core device through its shim handle; xrt::device
    // over that handle shares it, so the application's device stays open and its own.
    xclDeviceHandle shim = xrtDeviceToXclDevice(static_cast<xrtDeviceHandle>(xrt_device));
    if (!shim) lwload::fail(lwload::ErrorCode::usage, "lwload_device_from_xrt: not an open XRT device handle");
    return lwload::open_xrt_device(::xrt::device(shim));
  });
}
