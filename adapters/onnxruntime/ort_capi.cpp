// The ONNX Runtime adapter's C API (lwload/onnxruntime.h) over its C++ one.
#include "lwload/onnxruntime.h"

#include <string>
#include <utility>

#include "lwload/backend_impl.hpp"
#include "lwload/error.hpp"
#include "lwload/onnxruntime.hpp"

struct lwload_ort_session {
  lwload::onnxruntime::Session session;
};

namespace {

template <typename Open>
lwload_ort_session* open(const OrtApi* api, OrtEnv* env, const OrtSessionOptions* options, int lazy, OrtSession** out,
                         lwload_error** err, Open&& open_manifest) noexcept {
  try {
    if (!api || !env || !options || !out)
      lwload::fail(lwload::ErrorCode::usage, "lwload_ort_session_open: a NULL argument");
    lwload::LoadOptions load;
    load.lazy = lazy != 0;
    auto* s = new lwload_ort_session{lwload::onnxruntime::create_session(*api, env, options, open_manifest(), load)};
    *out = s->session.get();
    return s;
  } catch (...) {
    lwload::c_api_store_error(err);
  }
  return nullptr;
}

}  // namespace

extern "C" {

lwload_ort_session* lwload_ort_session_open(const OrtApi* api, OrtEnv* env, const OrtSessionOptions* options,
                                            const char* path, int lazy, OrtSession** out, lwload_error** err) {
  return open(api, env, options, lazy, out, err, [&] {
    if (!path) lwload::fail(lwload::ErrorCode::usage, "lwload_ort_session_open: path is NULL");
    return lwload::open_manifest(path);
  });
}

lwload_ort_session* lwload_ort_session_open_fd(const OrtApi* api, OrtEnv* env, const OrtSessionOptions* options, int fd,
                                               uint64_t offset, uint64_t length, int lazy, OrtSession** out,
                                               lwload_error** err) {
  return open(api, env, options, lazy, out, err, [&] { return lwload::open_manifest_fd(fd, offset, length); });
}

lwload_ort_session* lwload_ort_session_open_memory(const OrtApi* api, OrtEnv* env, const OrtSessionOptions* options,
                                                   const void* data, size_t size, int lazy, OrtSession** out,
                                                   lwload_error** err) {
  return open(api, env, options, lazy, out, err, [&] {
    if (!data) lwload::fail(lwload::ErrorCode::usage, "lwload_ort_session_open_memory: data is NULL");
    return lwload::open_manifest_memory({static_cast<const std::byte*>(data), size});
  });
}

void lwload_ort_session_free(lwload_ort_session* session) { delete session; }

size_t lwload_ort_session_route_count(const lwload_ort_session* session) {
  return session ? session->session.routes().size() : 0;
}

int lwload_ort_session_route(const lwload_ort_session* session, size_t index, lwload_ort_route* out) {
  if (!session || !out || index >= session->session.routes().size()) return -1;
  const lwload::onnxruntime::Route& r = session->session.routes()[index];
  out->name = r.name.c_str();
  out->way = lwload::onnxruntime::way_name(r.way).data();  // string literals: NUL-terminated
  out->reason = r.reason.c_str();
  out->data = r.data;
  out->bytes = r.bytes;
  return 0;
}

int lwload_ort_prepacking(const lwload_ort_session* session) {
  return session && session->session.prepacking() ? 1 : 0;
}

}  // extern "C"
