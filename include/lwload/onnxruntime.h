/* lwload's ONNX Runtime adapter, for C and for bindings (ONNX Runtime's own API is C; its C#, Java,
 * Python and JavaScript bindings sit on it). liblwload-onnxruntime; the C++ API is
 * lwload/onnxruntime.hpp, which says how it works.
 *
 * Conventions (as lwload.h's, in LevelDB's c.h manner):
 *   - An ONNX Runtime session over lwload's weights is an lwload_ort_session. It owns the OrtSession
 *     it hands out, the OrtValues over lwload's bytes and the weights, and lwload_ort_session_free
 *     releases them in that order: the session first, the bytes last. Do not release the OrtSession
 *     yourself, and do not use it after lwload_ort_session_free.
 *   - The caller's OrtEnv must outlive the session; its OrtSessionOptions are cloned, not changed
 *     (release them whenever you like).
 *   - Errors as lwload.h reports them: a function that can fail takes `lwload_error** err`, stores a
 *     new lwload_error there on failure (its status and message; free it with lwload_error_free)
 *     and returns NULL. err may be NULL when the error is not wanted.
 *   - Strings returned by lwload_ort_route are owned by the session and live as long as it does. */
#ifndef LWLOAD_ONNXRUNTIME_H
#define LWLOAD_ONNXRUNTIME_H

// Adapter onnxruntime's public header: on the public API alone, outside the layer table
// (docs/ARCHITECTURE.md, "Layers").

#include <stddef.h>
#include <stdint.h>

#include <onnxruntime_c_api.h>

#include "lwload/export.h"
#include "lwload/lwload.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct lwload_ort_session lwload_ort_session;

/* How ONNX Runtime received one of the model's constants. */
typedef struct lwload_ort_route {
  const char* name;   /* the name the graph gives it */
  const char* way;    /* "zero_copy" (the file's mapped pages), "direct" (lwload's host copy), or
                         "in_graph" (ONNX Runtime parses and copies it itself) */
  const char* reason; /* why: the plan's reason, or why it stays in the graph */
  const void* data;   /* zero_copy / direct: the bytes ONNX Runtime uses; NULL for in_graph */
  uint64_t bytes;
} lwload_ort_route;

/* Creates the session from the ONNX model at `path` (a file, or a folder holding one model), with
 * `api` (OrtGetApiBase()->GetApi(ORT_API_VERSION)), `env` and `options`. `lazy` non-zero: zero-copy
 * pages fault in on first use instead of being resident when this returns. On success stores the
 * OrtSession in *out (owned by the returned object). */
LWLOAD_API lwload_ort_session* lwload_ort_session_open(const OrtApi* api, OrtEnv* env, const OrtSessionOptions* options,
                                                       const char* path, int lazy, OrtSession** out,
                                                       lwload_error** err);
/* The same for a model that is `length` bytes at `offset` of the open file `fd` (lwload duplicates
 * it), or `size` bytes of the caller's memory (kept alive and unchanged as long as the session). */
LWLOAD_API lwload_ort_session* lwload_ort_session_open_fd(const OrtApi* api, OrtEnv* env,
                                                          const OrtSessionOptions* options, int fd, uint64_t offset,
                                                          uint64_t length, int lazy, OrtSession** out,
                                                          lwload_error** err);
LWLOAD_API lwload_ort_session* lwload_ort_session_open_memory(const OrtApi* api, OrtEnv* env,
                                                              const OrtSessionOptions* options, const void* data,
                                                              size_t size, int lazy, OrtSession** out,
                                                              lwload_error** err);
/* Releases the OrtSession, then the OrtValues, then the weights. NULL is ignored. */
LWLOAD_API void lwload_ort_session_free(lwload_ort_session* session);

LWLOAD_API size_t lwload_ort_session_route_count(const lwload_ort_session* session);
/* Route `index` (< lwload_ort_session_route_count); returns 0 and fills *out, or -1 for an index past the end. */
LWLOAD_API int lwload_ort_session_route(const lwload_ort_session* session, size_t index, lwload_ort_route* out);
/* Whether ONNX Runtime prepacks weights in this session (the options did not set
 * "session.disable_prepacking" to "1"): its packed copies are memory of its own. */
LWLOAD_API int lwload_ort_prepacking(const lwload_ort_session* session);

#ifdef __cplusplus
}
#endif

#endif /* LWLOAD_ONNXRUNTIME_H */
