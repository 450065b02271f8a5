// C API loading: options set by their CLI names, C callbacks adapted to LoadOptions, and handles
// described in C structs that point into the Weights (valid while they live).
#include "capi/capi_objects.hpp"
#include "capi/capi_struct.hpp"
#include "loading/option_text.hpp"
#include "lwload/error.hpp"

namespace {

using lwload::capi::guarded;
using lwload::capi::require;

lwload_tensor_handle to_c(const lwload::TensorHandle& t) {
  // placement and native type names are string literals, so their views are NUL-terminated.
  return lwload_tensor_handle{sizeof(lwload_tensor_handle),
                              t.info->name.c_str(),
                              lwload::placement_name(t.placement).data(),
                              lwload::native_type_name(t.native.type).data(),
                              t.native.handle,
                              t.offset,
                              t.bytes,
                              t.info->pieces.empty() ? 0 : t.info->pieces.front().offset};
}

lwload::LoadOptions with_callbacks(const lwload_load_options* o) {
  if (o == nullptr) return {};
  lwload::LoadOptions options = o->options;
  if (const auto fn = o->on_tensor_ready) {
    options.on_tensor_ready = [fn, user = o->ready_user](const lwload::TensorHandle& t) {
      const lwload_tensor_handle handle = to_c(t);
      if (fn(user, &handle) != 0)
        lwload::fail(lwload::ErrorCode::cancelled,
                     "load cancelled: the on_tensor_ready callback returned non-zero for '", t.info->name, "'");
    };
  }
  if (const auto fn = o->on_progress) {
    options.on_progress = [fn, user = o->progress_user](std::uint64_t done, std::uint64_t total) {
      fn(user, done, total);
    };
  }
  return options;
}

}  // namespace

extern "C" {

lwload_load_options* lwload_load_options_new(void) { return lwload::capi::new_handle<lwload_load_options>(); }

void lwload_load_options_free(lwload_load_options* o) { delete o; }

lwload_status lwload_load_options_set(lwload_load_options* o, const char* key, const char* value, lwload_error** err) {
  return lwload::capi::set_option(o, key, value, err, lwload::set_load_option, "lwload_load_options_set");
}

void lwload_load_options_on_tensor_ready(lwload_load_options* o, int (*fn)(void* user, const lwload_tensor_handle* t),
                                         void* user) {
  if (o == nullptr) return;
  o->on_tensor_ready = fn;
  o->ready_user = user;
}

void lwload_load_options_on_progress(lwload_load_options* o, void (*fn)(void* user, uint64_t done, uint64_t total),
                                     void* user) {
  if (o == nullptr) return;
  o->on_progress = fn;
  o->progress_user = user;
}

lwload_cancel* lwload_cancel_new(void) { return lwload::capi::new_handle<lwload_cancel>(); }

void lwload_cancel_request(lwload_cancel* c) {
  if (c != nullptr) c->token->cancel();
}

void lwload_cancel_free(lwload_cancel* c) { delete c; }

void lwload_load_options_set_cancel(lwload_load_options* o, lwload_cancel* c) {
  if (o != nullptr) o->options.cancel = c ? c->token : nullptr;
}

lwload_weights* lwload_load(const lwload_manifest* m, lwload_device* d, const lwload_load_options* o,
                            lwload_error** err) {
  return guarded(err, static_cast<lwload_weights*>(nullptr), [&] {
    require(m, "lwload_load", "manifest");
    require(d, "lwload_load", "device");
    return new lwload_weights{lwload::load(m->manifest, *d->device, with_callbacks(o))};
  });
}

lwload_weights* lwload_load_consume(lwload_manifest* m, lwload_device* d, const lwload_load_options* o,
                                    lwload_error** err) {
  const std::unique_ptr<lwload_manifest> owned(m);  // consumed on every path, failures included
  return guarded(err, static_cast<lwload_weights*>(nullptr), [&] {
    require(m, "lwload_load_consume", "manifest");
    require(d, "lwload_load_consume", "device");
    return new lwload_weights{lwload::load(std::move(owned->manifest), *d->device, with_callbacks(o))};
  });
}

lwload_status lwload_weights_find(const lwload_weights* w, const char* name, lwload_tensor_handle* out,
                                  lwload_error** err) {
  return lwload::capi::status_call(err, [&] {
    require(w, "lwload_weights_find", "weights");
    require(name, "lwload_weights_find", "name");
    const lwload::TensorHandle* t = w->weights.find(name);
    if (t == nullptr) lwload::capi::not_found(std::string("lwload_weights_find: no tensor named '") + name + "'");
    lwload::capi::fill(out, to_c(*t), "lwload_weights_find");
  });
}

size_t lwload_weights_tensor_count(const lwload_weights* w) { return w ? w->weights.tensors().size() : 0; }

lwload_status lwload_weights_tensor(const lwload_weights* w, size_t index, lwload_tensor_handle* out,
                                    lwload_error** err) {
  return lwload::capi::status_call(err, [&] {
    require(w, "lwload_weights_tensor", "weights");
    const auto tensors = w->weights.tensors();
    if (index >= tensors.size())
      lwload::fail(lwload::ErrorCode::usage, "lwload_weights_tensor: index ", index,
                   " is out of range (the weights hold ", tensors.size(), " tensors)");
    lwload::capi::fill(out, to_c(tensors[index]), "lwload_weights_tensor");
  });
}

lwload_status lwload_weights_verify(const lwload_weights* w, lwload_error** err) {
  return lwload::capi::status_call(err, [&] {
    require(w, "lwload_weights_verify", "weights");
    lwload::verify(w->weights);
  });
}

void lwload_weights_free(lwload_weights* w) { delete w; }

}  // extern "C"
