// C API devices: opened by spec, and the one way a backend's C constructor hands the C API a
// device it opened in the application's own context (c_api_device), and how such a constructor
// reports a failure (c_api_store_error). Each backend writes its own
// constructor (lwload_device_from_opencl in backends/opencl/capi.cpp, ...), as a backend
// outside lwload would; this file names none of them.
#include "capi/capi_objects.hpp"
#include "lwload/backend.hpp"
#include "lwload/backend_impl.hpp"
#include "lwload/error.hpp"

namespace lwload {

lwload_device* c_api_device(lwload_error** err, const std::function<std::unique_ptr<Device>()>& open) noexcept {
  return capi::guarded(err, static_cast<lwload_device*>(nullptr), [&] {
    std::unique_ptr<Device> device = open();
    if (!device) fail(ErrorCode::usage, "c_api_device: the backend opened no device");
    std::string id = device->info().id();
    return new lwload_device{std::move(device), std::move(id)};
  });
}

void c_api_store_error(lwload_error** err) noexcept { capi::store_current_error(err); }

}  // namespace lwload

extern "C" {

lwload_device* lwload_device_open(const char* spec, lwload_error** err) {
  return lwload::c_api_device(err, [&] {
    lwload::capi::require(spec, "lwload_device_open", "spec");
    return lwload::open_device(spec);
  });
}

void lwload_device_free(lwload_device* d) { delete d; }

const char* lwload_device_id(const lwload_device* d) { return d ? d->id.c_str() : ""; }

const char* lwload_device_name(const lwload_device* d) { return d ? d->device->info().name.c_str() : ""; }

}  // extern "C"
