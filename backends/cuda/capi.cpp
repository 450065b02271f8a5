// lwload_device_from_cuda: the CUDA backend's C constructor, written on the public API as a
// backend outside lwload would write its own (c_api_device, lwload/backend_impl.hpp).
#include "lwload/backend_impl.hpp"
#include "lwload/cuda.hpp"
#include "lwload/error.hpp"
#include "lwload/lwload.h"

extern "C" lwload_device* lwload_device_from_cuda(void* cu_context, void* cu_stream, uint32_t cu_device_index,
                                                  lwload_error** err) {
  return lwload::c_api_device(err, [&] {
    if (!cu_context) lwload::fail(lwload::ErrorCode::usage, "lwload_device_from_cuda: cu_context is NULL");
    return lwload::open_cuda_device(cu_context, cu_stream, cu_device_index);
  });
}
