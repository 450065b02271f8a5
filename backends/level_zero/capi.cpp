// lwload_device_from_level_zero: the Level Zero backend's C constructor, written on the public API
// as a backend outside lwload would write its own (c_api_device, lwload/backend_impl.hpp).
#include "lwload/backend_impl.hpp"
#include "lwload/error.hpp"
#include "lwload/level_zero.hpp"
#include "lwload/lwload.h"

extern "C" lwload_device* lwload_device_from_level_zero(void* ze_driver, void* ze_context, void* ze_device,
                                                        lwload_error** err) {
  return lwload::c_api_device(err, [&] {
    if (!ze_context) lwload::fail(lwload::ErrorCode::usage, "lwload_device_from_level_zero: ze_context is NULL");
    return lwload::open_level_zero_device(static_cast<ze_driver_handle_t>(ze_driver),
                                          static_cast<ze_context_handle_t>(ze_context),
                                          static_cast<ze_device_handle_t>(ze_device));
  });
}
