/* lwload's C API: for C programs and for bindings (Python ctypes, Rust, Node-API, JNI).
 *
 * Conventions (LevelDB's c.h):
 * - Objects are opaque handles, made by *_open / *_new / lwload_load and released by the matching
 *   *_free (each *_free accepts NULL).
 * - Failures are values: a function that can fail takes `lwload_error** err`. On failure it returns
 *   NULL (or a status) and, when `err` is not NULL, stores a new error the caller frees with
 *   lwload_error_free; on success *err is left alone. Exceptions never cross this boundary.
 * - Error messages name the file, tensor and field, as the C++ API's do.
 * - Strings returned stay valid as long as the object they came from.
 * - Callbacks run on the thread that called lwload_load, one at a time, before it returns.
 * - Objects may be used from any thread, one thread at a time each.
 */
#ifndef LWLOAD_LWLOAD_H
#define LWLOAD_LWLOAD_H

#include <stddef.h>
#include <stdint.h>

#include "lwload/export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum lwload_status {
  LWLOAD_OK = 0,
  LWLOAD_BAD_INPUT,      /* the model file is malformed, truncated or inconsistent */
  LWLOAD_IO,             /* the operating system refused a read, open or map */
  LWLOAD_DEVICE,         /* a backend or driver call failed */
  LWLOAD_OUT_OF_MEMORY,  /* an allocation failed (host or device) */
  LWLOAD_DOES_NOT_FIT,   /* the plan does not fit the device or the budget; nothing was allocated */
  LWLOAD_CANCELLED,      /* the load was cancelled (an on_tensor_ready callback returned non-zero) */
  LWLOAD_USAGE,          /* an invalid request: unknown device or option, bad value */
  LWLOAD_UNSUPPORTED     /* valid input lwload cannot handle, or a backend this build lacks */
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
  const char* name;
  const char* dtype;     /* canonical dtype name: "F32", "BF16", "Q4_K", ... */
  size_t rank;
  const int64_t* shape;  /* `rank` dimensions, in the format's own order (GGUF: ne0 first) */
  uint64_t bytes;        /* bytes of the stored tensor */
} lwload_tensor_info;

/* A loaded tensor: where it lives on the device. */
typedef struct lwload_tensor_handle {
  const char* name;
  const char* placement;    /* "zero_copy", "direct", "staged" ("skipped": not loaded, see only) */
  const char* native_type;  /* "host_ptr", "cl_mem", "cl_svm_ptr", "ze_ptr", "vk_buffer",
                               "cu_deviceptr", or "none" (null device, skipped tensor) */
  void* native;             /* the handle `native_type` names */
  uint64_t offset;          /* the tensor starts `offset` bytes into `native` */
  uint64_t bytes;
  uint64_t file_offset;     /* where its first byte sits in its (first) file */
} lwload_tensor_handle;

/* The version of the liblwload linked, "MAJOR.MINOR.PATCH". */
LWLOAD_API const char* lwload_version(void);

LWLOAD_API lwload_status lwload_error_status(const lwload_error* e);
LWLOAD_API const char* lwload_error_message(const lwload_error* e);
LWLOAD_API void lwload_error_free(lwload_error* e);
/* "ok", "bad_input", "io", ... (never NULL). */
LWLOAD_API const char* lwload_status_name(lwload_status status);

/* Manifests: a model's tensors from its headers alone, before any weight is read. `path` is a file
 * or a folder holding one model. */
LWLOAD_API lwload_manifest* lwload_manifest_open(const char* path, lwload_error** err);
/* The same with options: "allow-outside-links" ("true": follow links out of the model's folder, for
 * weights linked from a shared cache such as a Hugging Face hub snapshot), "format" (force a
 * reader: "safetensors", "gguf", ...), "max-tensors" and "max-name-bytes" (the caps on what a header
 * may ask for). Unknown key or bad value → LWLOAD_USAGE, options unchanged. `o` may be NULL. */
LWLOAD_API lwload_open_options* lwload_open_options_new(void);
LWLOAD_API void lwload_open_options_free(lwload_open_options* o);
LWLOAD_API lwload_status lwload_open_options_set(lwload_open_options* o, const char* key, const char* value);
LWLOAD_API lwload_manifest* lwload_manifest_open_with(const char* path, const lwload_open_options* o,
                                                      lwload_error** err);
LWLOAD_API void lwload_manifest_free(lwload_manifest* m);
LWLOAD_API size_t lwload_manifest_tensor_count(const lwload_manifest* m);
LWLOAD_API int lwload_manifest_tensor(const lwload_manifest* m, size_t index,
                                      lwload_tensor_info* out); /* 0, or -1 out of range */
LWLOAD_API const char* lwload_manifest_format(const lwload_manifest* m); /* "safetensors", "gguf", ... */
/* The file holding tensor `index`'s first byte (the one lwload_tensor_handle::file_offset is in):
 * the model file, a shard or an external data file; NULL out of range or for a tensor without bytes. */
LWLOAD_API const char* lwload_manifest_tensor_file(const lwload_manifest* m, size_t index);
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
LWLOAD_API void lwload_device_free(lwload_device* d);
LWLOAD_API const char* lwload_device_id(const lwload_device* d);   /* "opencl:0" */
LWLOAD_API const char* lwload_device_name(const lwload_device* d); /* the driver's name for it */

/* Load options: NULL options mean the defaults (automatic placement, 64 MiB staging budget). */
LWLOAD_API lwload_load_options* lwload_load_options_new(void);
LWLOAD_API void lwload_load_options_free(lwload_load_options* o);
/* The CLI's option names, without "--": "placement" (auto, zero-copy, direct, staged), "budget"
 * ("64MiB"), "slots", "only" (comma-separated names), "io" (auto, io_uring, pread), "direct-io",
 * "lazy" (true/false), "io-threads". Unknown key or bad value → LWLOAD_USAGE, options unchanged. */
LWLOAD_API lwload_status lwload_load_options_set(lwload_load_options* o, const char* key, const char* value);
/* Each loaded tensor once, in load order, when its bytes are usable by the device. A non-zero
 * return cancels the load: lwload_load releases everything and fails with LWLOAD_CANCELLED. */
LWLOAD_API void lwload_load_options_on_tensor_ready(lwload_load_options* o,
                                                    int (*fn)(void* user, const lwload_tensor_handle* t),
                                                    void* user);
/* Bytes of tensor data on the device so far, of `total`. */
LWLOAD_API void lwload_load_options_on_progress(lwload_load_options* o,
                                                void (*fn)(void* user, uint64_t done, uint64_t total),
                                                void* user);

/* Cancellation from another thread (a UI's "stop" button): lwload_cancel_request may be called from
 * any thread while lwload_load runs; the load then releases everything and fails with
 * LWLOAD_CANCELLED. The options keep what they need: the cancel object may be freed any time. */
LWLOAD_API lwload_cancel* lwload_cancel_new(void);
LWLOAD_API void lwload_cancel_request(lwload_cancel* c);
LWLOAD_API void lwload_cancel_free(lwload_cancel* c);
LWLOAD_API void lwload_load_options_set_cancel(lwload_load_options* o, lwload_cancel* c);

/* Loads every tensor of `m` (or those "only" names) onto `d`. All or nothing: on failure nothing
 * stays allocated. The weights keep what they need of `m` and `d`: both may be freed first. */
LWLOAD_API lwload_weights* lwload_load(const lwload_manifest* m, lwload_device* d, const lwload_load_options* o,
                                       lwload_error** err);
LWLOAD_API int lwload_weights_find(const lwload_weights* w, const char* name,
                                   lwload_tensor_handle* out); /* 0, or -1 not found */
LWLOAD_API size_t lwload_weights_tensor_count(const lwload_weights* w);
LWLOAD_API int lwload_weights_tensor(const lwload_weights* w, size_t index,
                                     lwload_tensor_handle* out); /* load order; 0, or -1 out of range */
/* Reads every tensor back from the device and compares it with the file: LWLOAD_OK, or the first
 * difference (LWLOAD_DEVICE) or a file changed since the load (LWLOAD_IO) in *err. */
LWLOAD_API lwload_status lwload_weights_verify(const lwload_weights* w, lwload_error** err);
LWLOAD_API void lwload_weights_free(lwload_weights* w);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* LWLOAD_LWLOAD_H */
