// lwload_device_from_opencl: the OpenCL backend's C constructor, written on the public API as a
// backend outside lwload would write its own (c_api_device, lwload/backend_impl.hpp).
#include "lwload/backend_impl.hpp"
#include "lwload/error.hpp"
#include "lwload/lwload.h"
#include "lwload/opencl.hpp"

extern "C" lwload_device* lwload_device_from_opencl(void* context, void* device, void* queue, lwload_error** err) {
  return lwload::c_api_device(err, [&] {
    if (!context) lwload::fail(lwload::ErrorCode::usage, "lwload_device_from_opencl: cl_context is NULL");
    if (!device) lwload::fail(lwload::ErrorCode::usage, "lwload_device_from_opencl: cl_device_id is NULL");
    return lwload::open_opencl_device(static_cast<cl_context>(context), static_cast<cl_device_id>(device),
                                      static_cast<cl_command_queue>(queue));
  });
}
