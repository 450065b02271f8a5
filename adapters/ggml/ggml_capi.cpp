// The adapter's C API (lwload/ggml.h) over lwload::ggml (lwload/ggml.hpp). Exceptions never cross
// into C: each entry point that can fail stores what was thrown in *err (c_api_store_error).
#include <memory>
#include <utility>

#include "lwload/backend_impl.hpp"
#include "lwload/error.hpp"
#include "lwload/ggml.h"
#include "lwload/ggml.hpp"
#include "lwload/lwload.hpp"

struct lwload_ggml_model {
  lwload::ggml::Model model;
  std::size_t count = 0;  // tensors in the context
};

extern "C" {

lwload_ggml_model* lwload_ggml_load(const char* path, ggml_backend_dev_t device, lwload_error** err) {
  try {
    if (!path) lwload::fail(lwload::ErrorCode::usage, "lwload_ggml_load: path is NULL");
    if (!device) lwload::fail(lwload::ErrorCode::usage, "lwload_ggml_load: device is NULL");
    lwload::ggml::Model model = lwload::ggml::load(lwload::open_manifest(path), device);
    std::size_t count = 0;
    for (ggml_tensor* tensor : model.tensors()) count += tensor != nullptr;
    return new lwload_ggml_model{std::move(model), count};
  } catch (...) {
    lwload::c_api_store_error(err);
    return nullptr;
  }
}

ggml_context* lwload_ggml_model_context(const lwload_ggml_model* m) { return m ? m->model.context() : nullptr; }

ggml_tensor* lwload_ggml_model_tensor(const lwload_ggml_model* m, const char* name) {
  return m && name ? m->model.tensor(name) : nullptr;
}

size_t lwload_ggml_model_tensor_count(const lwload_ggml_model* m) { return m ? m->count : 0; }

void lwload_ggml_model_free(lwload_ggml_model* m) { delete m; }

lwload_device* lwload_device_from_ggml(ggml_backend_dev_t device, lwload_error** err) {
  return lwload::c_api_device(err, [&] { return lwload::ggml::open_device(device); });
}

}  // extern "C"
