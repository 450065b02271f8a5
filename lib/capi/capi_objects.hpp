// What the C API's opaque handles are, and the one guard every entry point runs its body in, so
// no exception crosses into C.
#pragma once

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

// Runs `body` and answers its outcome as a status (the error's message is dropped).
template <typename Body>
lwload_status status_of(Body&& body) noexcept {
  lwload_error* error = nullptr;
  guarded(&error, 0, [&] {
    body();
    return 0;
  });
  const lwload_status status = lwload_error_status(error);
  lwload_error_free(error);
  return status;
}

// lwload_*_options_set: `set(copy, key, value)` on a copy of `options`, kept only when it succeeds,
// so a bad value leaves the options as they were.
template <typename Options, typename Set>
lwload_status set_option(Options* options, const char* key, const char* value, Set&& set) noexcept {
  if (options == nullptr || key == nullptr || value == nullptr) return LWLOAD_USAGE;
  return status_of([&] {
    auto changed = options->options;
    set(changed, key, value);
    options->options = std::move(changed);
  });
}

// Throws Error(usage) "<function>: <what> is NULL" for a missing argument.
void require(const void* argument, const char* function, const char* what);

}  // namespace lwload::capi
