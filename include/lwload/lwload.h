/* lwload's C API: for C programs and for bindings (Python ctypes, Rust, Node-API, JNI). Its ABI is
 * versioned: every function is exported with the symbol version LWLOAD_1 (lib/lwload.map), and
 * later releases only add functions, enum values and trailing struct fields.
 *
 * Conventions (after LevelDB's c.h and llama.h):
 * - Ownership. Objects are opaque handles, made by *_open / *_new / *_from_* / lwload_load* and
 *   released by the matching *_free; each *_free accepts NULL. lwload_load_consume takes the
 *   manifest it is given (see there); nothing else takes a handle from the caller.
 * - Errors. A function that can fail returns lwload_status (LWLOAD_OK == 0, failures non-zero) and
 *   takes a trailing `lwload_error** err`. Constructors that make a handle (lwload_manifest_open*,
 *   lwload_device_*, lwload_load*) return the handle instead, NULL on failure. On failure, when
 *   `err` is not NULL, *err receives a new error (status and message, which names the file, tensor
 *   and field) that the caller frees with lwload_error_free; pass it pointing at NULL. On success
 *   *err is left alone. *_new(void) fail only when out of memory (NULL, no error). Getters (counts,
 *   names, ids) cannot fail: given NULL they answer 0 or "". Exceptions never cross this boundary.
 * - Strings returned, and the pointers in the structs filled, stay valid as long as the object
 *   they came from (a tensor's name as long as the manifest or the weights).
 * - Structs the library fills (lwload_tensor_info, lwload_tensor_handle) begin with `struct_size`,
 *   which the caller sets to the size it knows: `lwload_tensor_info info = {.struct_size = sizeof info};`. The
 *   library fills only the whole fields that fit in it, never writes past it, and sets it to the
 *   bytes it filled (less than the caller's when the library is older). A struct_size below the
 *   *_MIN_SIZE of the first version is LWLOAD_USAGE. Read a field added later only when
 *   LWLOAD_HAS_FIELD says it was filled; structs handed to callbacks follow the same rule.
 * - Threads. Callbacks (on_tensor_ready, on_progress) run on the thread that called lwload_load*,
 *   one at a time, before it returns. lwload_cancel_request may be called from any thread. Other
 *   objects may be used from any thread, one thread at a time each.
 * - Callbacks must return normally. A callback that leaves by longjmp (or, from C++, by an
 *   exception, or by ending the thread) skips the library's cleanup: the load's locks, buffers,
 *   staging memory and threads are left as they were, and any later call into the library may then
 *   crash or hang. To stop a load from a callback, return non-zero from on_tensor_ready (the load
 *   then fails with LWLOAD_CANCELLED, everything released) or call lwload_cancel_request, and
 *   unwind after lwload_load* returns.
 * - Versions. LWLOAD_VERSION_* are the headers' version (meson's project version; a build-time
 *   check keeps them equal); lwload_version() / lwload_version_number() the library's. A program
 *   runs with any library of the same major version and at least the minor it was built with:
 *     lwload_version_number() / 1000000 == LWLOAD_VERSION_MAJOR &&
 *     lwload_version_number() >= LWLOAD_VERSION_NUMBER
 *   (with an older library, functions added later are missing and fields added later unfilled).
 */
#ifndef LWLOAD_LWLOAD_H
#define LWLOAD_LWLOAD_H

// Layer capi's public header: refused below capi in lwload's build (docs/ARCHITECTURE.md, "Layers").
#if defined(LWLOAD_LAYER_CORE) && !defined(LWLOAD_LAYER_CAPI)
#error \
    "lwload layering: include/lwload/lwload.h (layer capi) is not below this layer (the layer table in meson.build says what each layer may include)"
#endif

#include <stddef.h>
#include <stdint.h>

#include "lwload/export.h"

#define LWLOAD_VERSION_MAJOR 0
#define LWLOAD_VERSION_MINOR 1
#define LWLOAD_VERSION_PATCH 0
/* MAJOR * 1000000 + MINOR * 1000 + PATCH, as lwload_version_number() answers. */
#define LWLOAD_VERSION_NUMBER (LWLOAD_VERSION_MAJOR * 1000000 + LWLOAD_VERSION_MINOR * 1000 + LWLOAD_VERSION_PATCH)

/* Whether `field` of *ptr (a struct of `type` with struct_size) was filled. */
#define LWLOAD_HAS_FIELD(ptr, type, field) \
  ((ptr)->struct_size >= offsetof(type, field) + sizeof(((const type*)0)->field))

#ifdef __cplusplus
extern "C" {
#endif

typedef enum lwload_status {
  LWLOAD_OK = 0,
  LWLOAD_BAD_INPUT,     /* the model file is malformed, truncated or inconsistent */
  LWLOAD_IO,            /* the operating system refused a read, open or map */
  LWLOAD_DEVICE,        /* a backend or driver call failed */
  LWLOAD_OUT_OF_MEMORY, /* an allocation failed (host or device) */
  LWLOAD_DOES_NOT_FIT,  /* the plan does not fit the device or the budget; nothing was allocated */
  LWLOAD_CANCELLED,     /* the load was cancelled (an on_tensor_ready callback returned non-zero) */
  LWLOAD_USAGE,         /* an invalid request: unknown device or option, bad value, NULL argument,
                           index out of range, struct_size too small */
  LWLOAD_UNSUPPORTED,   /* valid input lwload cannot handle, or a backend this build lacks */
  LWLOAD_NOT_FOUND      /* no tensor by that name (lwload_weights_find) */
} lwload_status;

typedef struct lwload_error lwload_error;
typedef struct lwload_open_options lwload_open_options;
typedef struct lwload_manifest lwload_manifest;
typedef struct lwload_device lwload_device;
typedef struct lwload_load_options lwload_load_options;
typedef struct lwload_weights lwload_weights;
typedef struct lwload_cancel lwload_cancel;

/* A tensor as the model's headers describe it (no data read). */
typedef struct lwload_tensor_info {
  size_t struct_size; /* set by the caller: sizeof(lwload_tensor_info) (see the top comment) */
  const char* name;
  const char* dtype; /* canonical dtype name: "F32", "BF16", "Q4_K", ... */
  size_t rank;
  const int64_t* shape; /* `rank` dimensions, in the format's own order (GGUF: ne0 first) */
  uint64_t bytes;       /* bytes of the stored tensor */
  const char* file;     /* the file holding its first byte (the one lwload_tensor_handle::file_offset
                           is in): the model file, a shard or an external data file; NULL for a
                           tensor without bytes */
  const char* encoding; /* how the file stores it: "raw" (the bytes themselves), "onnx_varint" or
                           "onnx_fixed" (typed fields, converted at load), "sparse" (densified at load),
                           "strided" (not row-major in the file: copied row-major at load) */
  uint64_t flags;       /* LWLOAD_TENSOR_* bits */
} lwload_tensor_info;
/* lwload_tensor_info::flags: stored sparse (TFLite/Circle). Unless the manifest was opened with
 * "densify", `bytes` and what loads are the stored values only, not dtype x shape. */
#define LWLOAD_TENSOR_SPARSE ((uint64_t)1)
/* The smallest struct_size accepted: struct_size and name. */
#define LWLOAD_TENSOR_INFO_MIN_SIZE (offsetof(lwload_tensor_info, name) + sizeof(const char*))

/* A loaded tensor: where it lives on the device. */
typedef struct lwload_tensor_handle {
  size_t struct_size; /* set by the caller: sizeof(lwload_tensor_handle) (see the top comment) */
  const char* name;
  const char* placement;   /* "zero_copy", "direct", "staged" ("skipped": not loaded: not selected by
                              "only", empty, or STRING) */
  const char* native_type; /* "host_ptr", "cl_mem", "cl_svm_ptr", "ze_ptr", "vk_buffer",
                              "cu_deviceptr", or "none" (null device, skipped tensor) */
  void* native;            /* the handle `native_type` names */
  uint64_t offset;         /* the tensor starts `offset` bytes into `native` */
  uint64_t bytes;
  uint64_t file_offset; /* where its first byte sits in its (first) file */
} lwload_tensor_handle;
/* The smallest struct_size accepted: struct_size and name. */
#define LWLOAD_TENSOR_HANDLE_MIN_SIZE (offsetof(lwload_tensor_handle, name) + sizeof(const char*))

/* The version of the liblwload linked: "MAJOR.MINOR.PATCH", and as LWLOAD_VERSION_NUMBER counts. */
LWLOAD_API const char* lwload_version(void);
LWLOAD_API uint32_t lwload_version_number(void);

LWLOAD_API lwload_status lwload_error_status(const lwload_error* e); /* LWLOAD_OK for NULL */
LWLOAD_API const char* lwload_error_message(const lwload_error* e);  /* "" for NULL */
LWLOAD_API void lwload_error_free(lwload_error* e);
/* "ok", "bad_input", "io", ..., "not_found" ("unknown" for other values; never NULL). */
LWLOAD_API const char* lwload_status_name(lwload_status status);

/* Manifests: a model's tensors from its headers alone, before any weight is read. `path` is a file
 * or a folder holding one model. */
LWLOAD_API lwload_manifest* lwload_manifest_open(const char* path, lwload_error** err);
/* The same with options: "allow-outside-links" ("true": follow links out of the model's folder, for
 * weights linked from a shared cache such as a Hugging Face hub snapshot), "densify" ("true":
 * sparse TFLite/Circle tensors load as their dense tensor, expanded on the host; otherwise as their
 * stored values), "format" (force a reader: "safetensors", "gguf", ...), "max-tensors" and
 * "max-name-bytes" (the caps on what a header may ask for). Unknown key or bad value → LWLOAD_USAGE, options unchanged.
 * `o` may be NULL. */
LWLOAD_API lwload_open_options* lwload_open_options_new(void);
LWLOAD_API void lwload_open_options_free(lwload_open_options* o);
LWLOAD_API lwload_status lwload_open_options_set(lwload_open_options* o, const char* key, const char* value,
                                                 lwload_error** err);
LWLOAD_API lwload_manifest* lwload_manifest_open_with(const char* path, const lwload_open_options* o,
                                                      lwload_error** err);
/* The model is the `length` bytes at `offset` of `fd` (e.g. an uncompressed asset inside an APK).
 * lwload duplicates fd; the caller may close its own. format: "safetensors", "gguf", ... or NULL to
 * sniff (it overrides o's "format"). Nothing outside those bytes is read; tensors' file_offset count
 * in fd's file, and zero-copy placements work at any offset. The model must be one file: a shard or
 * external data it names is an error naming that file (C++ can resolve them: OpenOptions::resolve). */
LWLOAD_API lwload_manifest* lwload_manifest_open_fd(int fd, uint64_t offset, uint64_t length, const char* format,
                                                    const lwload_open_options* o, lwload_error** err);
/* The model is `size` bytes at `data`, owned by the caller, who keeps them alive and unchanged until
 * every lwload_weights loaded from this manifest is freed (and the manifest too). Nothing is
 * copied: on the host device zero-copy tensors point into `data`. */
LWLOAD_API lwload_manifest* lwload_manifest_open_memory(const void* data, size_t size, const char* format,
                                                        const lwload_open_options* o, lwload_error** err);
LWLOAD_API void lwload_manifest_free(lwload_manifest* m);
LWLOAD_API size_t lwload_manifest_tensor_count(const lwload_manifest* m);
/* Tensor `index` (manifest order) into *out; LWLOAD_USAGE when out of range. */
LWLOAD_API lwload_status lwload_manifest_tensor(const lwload_manifest* m, size_t index, lwload_tensor_info* out,
                                                lwload_error** err);
LWLOAD_API const char* lwload_manifest_format(const lwload_manifest* m); /* "safetensors", "gguf", ... */
LWLOAD_API uint64_t lwload_manifest_total_bytes(const lwload_manifest* m);

/* Devices. `spec` is "auto", "host", "opencl:0", "vulkan:0", ... as `lwload devices` lists them. */
LWLOAD_API lwload_device* lwload_device_open(const char* spec, lwload_error** err);
/* The application's own device context, which lwload works in and never destroys (it holds only
 * references of its own where the API counts them). `cl_command_queue` may be NULL (lwload makes its
 * own queue in the context). LWLOAD_UNSUPPORTED when this build lacks the backend. */
LWLOAD_API lwload_device* lwload_device_from_opencl(void* cl_context, void* cl_device_id, void* cl_command_queue,
                                                    lwload_error** err);
LWLOAD_API lwload_device* lwload_device_from_level_zero(void* ze_driver, void* ze_context, void* ze_device,
                                                        lwload_error** err);
LWLOAD_API lwload_device* lwload_device_from_vulkan(void* vk_instance, void* vk_physical_device, void* vk_device,
                                                    uint32_t queue_family, lwload_error** err);
/* `cu_device_index`: the CUdevice ordinal the context belongs to; `cu_stream` may be NULL (lwload
 * makes its own stream in the context). */
LWLOAD_API lwload_device* lwload_device_from_cuda(void* cu_context, void* cu_stream, uint32_t cu_device_index,
                                                  lwload_error** err);
/* `xrt_device`: an xrtDeviceHandle (xrtDeviceOpen), which stays the application's to close. A
 * tensor's native handle is then a pointer to its xrt::bo (C++; "xrt_bo"). */
LWLOAD_API lwload_device* lwload_device_from_xrt(void* xrt_device, lwload_error** err);
LWLOAD_API void lwload_device_free(lwload_device* d);
LWLOAD_API const char* lwload_device_id(const lwload_device* d);   /* "opencl:0" */
LWLOAD_API const char* lwload_device_name(const lwload_device* d); /* the driver's name for it */

/* Load options: NULL options mean the defaults (automatic placement, 64 MiB staging budget). */
LWLOAD_API lwload_load_options* lwload_load_options_new(void);
LWLOAD_API void lwload_load_options_free(lwload_load_options* o);
/* The CLI's option names, without "--": "placement" (auto, zero-copy, direct, staged), "budget"
 * ("64MiB"), "slots", "only" (comma-separated names), "io" (auto, io_uring, pread), "direct-io"
 * (true/false; unset: O_DIRECT for staged reads when their files are not in the page cache),
 * "lazy" (true/false), "io-threads". Unknown key or bad value → LWLOAD_USAGE, options unchanged. */
LWLOAD_API lwload_status lwload_load_options_set(lwload_load_options* o, const char* key, const char* value,
                                                 lwload_error** err);
/* Each loaded tensor once, in load order, when its bytes are usable by the device. A non-zero
 * return cancels the load: lwload_load releases everything and fails with LWLOAD_CANCELLED. It must
 * return (no longjmp or exception out of it: see "Callbacks must return normally" above). */
LWLOAD_API void lwload_load_options_on_tensor_ready(lwload_load_options* o,
                                                    int (*fn)(void* user, const lwload_tensor_handle* t), void* user);
/* Bytes of tensor data on the device so far, of `total`. It must return, as on_tensor_ready. */
LWLOAD_API void lwload_load_options_on_progress(lwload_load_options* o,
                                                void (*fn)(void* user, uint64_t done, uint64_t total), void* user);

/* Cancellation from another thread (a UI's "stop" button): lwload_cancel_request may be called from
 * any thread while lwload_load runs; the load then releases everything and fails with
 * LWLOAD_CANCELLED. The options keep what they need: the cancel object may be freed any time. */
LWLOAD_API lwload_cancel* lwload_cancel_new(void);
LWLOAD_API void lwload_cancel_request(lwload_cancel* c);
LWLOAD_API void lwload_cancel_free(lwload_cancel* c);
LWLOAD_API void lwload_load_options_set_cancel(lwload_load_options* o, lwload_cancel* c);

/* Loads every tensor of `m` (or those "only" names) onto `d`. All or nothing: on failure nothing
 * stays allocated. The weights keep what they need of `m` and `d`: both may be freed first. They
 * keep a copy of the manifest; lwload_load_consume avoids it. */
LWLOAD_API lwload_weights* lwload_load(const lwload_manifest* m, lwload_device* d, const lwload_load_options* o,
                                       lwload_error** err);
/* The same, taking `m` over: its tensors move into the weights instead of being copied (with
 * millions of tensors the copy is most of the loader's own memory). `m` is consumed whatever the
 * outcome, success or failure, and must not be used or freed afterwards. */
LWLOAD_API lwload_weights* lwload_load_consume(lwload_manifest* m, lwload_device* d, const lwload_load_options* o,
                                               lwload_error** err);
/* The tensor called `name` into *out; LWLOAD_NOT_FOUND when no tensor has that name. */
LWLOAD_API lwload_status lwload_weights_find(const lwload_weights* w, const char* name, lwload_tensor_handle* out,
                                             lwload_error** err);
/* One per manifest tensor, at the manifest's index (the load order): tensors "only" left out, like
 * empty and STRING ones, are there with placement "skipped". */
LWLOAD_API size_t lwload_weights_tensor_count(const lwload_weights* w);
/* Tensor `index` (its manifest index) into *out; LWLOAD_USAGE when out of range. */
LWLOAD_API lwload_status lwload_weights_tensor(const lwload_weights* w, size_t index, lwload_tensor_handle* out,
                                               lwload_error** err);
/* Reads every tensor back from the device and compares it with the file: LWLOAD_OK, or the first
 * difference (LWLOAD_DEVICE) or a file changed since the load (LWLOAD_IO) in *err. */
LWLOAD_API lwload_status lwload_weights_verify(const lwload_weights* w, lwload_error** err);
LWLOAD_API void lwload_weights_free(lwload_weights* w);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* LWLOAD_LWLOAD_H */
