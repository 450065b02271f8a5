// What the C API's opaque handles are, and the one guard every entry point runs its body in, so
// no exception crosses into C.
#pragma once

#include "capi/layer.hpp"

#include <exception>
#include <memory>
#include <string>
#include <type_traits>

#include "lwload/loader.hpp"
#include "lwload/lwload.h"

struct lwload_error {
  lwload_status status;
  std::string message;
};

struct lwload_open_options {
  lwload::OpenOptions options;
};

struct lwload_manifest {
  lwload::Manifest manifest;
};

struct lwload_device {
  std::unique_ptr<lwload::Device> device;
  std::string id;  // info().id(), kept for lwload_device_id's C string
};

struct lwload_load_options {
  lwload::LoadOptions options;
  int (*on_tensor_ready)(void* user, const lwload_tensor_handle* t) = nullptr;
  void* ready_user = nullptr;
  void (*on_progress)(void* user, std::uint64_t done, std::uint64_t total) = nullptr;
  void* progress_user = nullptr;
};

struct lwload_cancel {
  std::shared_ptr<lwload::CancelToken> token = std::make_shared<lwload::CancelToken>();
};

struct lwload_weights {
  lwload::Weights weights;
};

namespace lwload::capi {

// Throws Error(usage) "<function>: <what> is NULL" for a missing argument.
void require(const void* argument, const char* function, const char* what);

// Throws what store_current_error reports as LWLOAD_NOT_FOUND (no ErrorCode says "not found": in C++
// a lookup answers nullptr instead).
[[noreturn]] void not_found(std::string message);

// Stores the exception in flight as a new lwload_error in *err (when err is not null).
void store_current_error(lwload_error** err) noexcept;

// Runs `body`; on any exception stores it in *err and returns `failed` instead.
template <typename Body, typename Result = std::invoke_result_t<Body>>
Result guarded(lwload_error** err, Result failed, Body&& body) noexcept {
  try {
    return body();
  } catch (...) {
    store_current_error(err);
    return failed;
  }
}

// Runs `body` and answers its outcome as a status; a failure's error goes to *err (when err is not
// null), as every status-returning entry point reports it.
template <typename Body>
lwload_status status_call(lwload_error** err, Body&& body) noexcept {
  lwload_error* error = nullptr;
  guarded(&error, 0, [&] {
    body();
    return 0;
  });
  const lwload_status status = lwload_error_status(error);
  if (err != nullptr && error != nullptr) *err = error;
  else lwload_error_free(error);
  return status;
}

// lwload_*_new: a handle made with its defaults, or NULL when it cannot be made.
template <typename Handle>
Handle* new_handle() noexcept {
  return guarded(nullptr, static_cast<Handle*>(nullptr), [] { return new Handle; });
}

// lwload_*_options_set: `set(copy, key, value)` on a copy of `options`, kept only when it succeeds,
// so a bad value leaves the options as they were.
template <typename Options, typename Set>
lwload_status set_option(Options* options, const char* key, const char* value, lwload_error** err, Set&& set,
                         const char* function) noexcept {
  return status_call(err, [&] {
    require(options, function, "options");
    require(key, function, "key");
    require(value, function, "value");
    auto changed = options->options;
    set(changed, key, value);
    options->options = std::move(changed);
  });
}

}  // namespace lwload::capi
