/* lwload's ggml adapter for C (liblwload-ggml; lwload/ggml.hpp is the C++ side): a model loaded onto
 * a ggml device as a ggml_context whose tensors carry the model's names, ggml types and `ne`, their
 * data in ggml backend buffers over the bytes lwload loaded (the file's own pages where the device
 * imports host memory). It follows lwload.h's conventions (ownership, errors, threads); in short:
 *
 *   ggml_backend_load_all();
 *   lwload_error* err = NULL;
 *   lwload_ggml_model* m = lwload_ggml_load("model.gguf", ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_GPU),
 * &err); if (!m) { fprintf(stderr, "%s\n", lwload_error_message(err)); lwload_error_free(err); return 1; } struct
 * ggml_tensor* w = lwload_ggml_model_tensor(m, "blk.0.attn_q.weight");
 *   ... build and compute graphs on the tensors ...
 *   lwload_ggml_model_free(m);
 *
 * Names. A tensor is named in ggml exactly as in the model, or the load is refused: a name with a
 * NUL byte (ggml reads names as C strings) or longer than GGML_MAX_NAME - 1 bytes (ggml keeps no
 * more) is LWLOAD_UNSUPPORTED before anything is read, naming the tensor and the limit. So
 * ggml_get_tensor(lwload_ggml_model_context(m), name) finds every loaded tensor by its own name.
 * Types and shapes are as lwload/ggml.hpp says; a tensor ggml has no type for is LWLOAD_UNSUPPORTED.
 *
 * Ownership. The model owns its ggml context (tensor records only), the ggml buffers the data lives
 * in and the file mappings under them; lwload_ggml_model_free releases them in that order. Tensors
 * and the context must not be used after it: compute the graphs that use them first. The ggml
 * device must outlive the model (ggml's devices live as long as their backend is loaded).
 */
#ifndef LWLOAD_GGML_H
#define LWLOAD_GGML_H

// Adapter ggml's public header: on the public API alone, outside the layer table
// (docs/ARCHITECTURE.md, "Layers").

#include <stddef.h>
#include <stdint.h>

#include <ggml-backend.h>
#include <ggml.h>

#include "lwload/export.h"
#include "lwload/lwload.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct lwload_ggml_model lwload_ggml_model;

/* Where a loaded tensor's bytes are in ggml: the native handle of a ggml device's buffers
 * (lwload_tensor_handle::native_type "ggml_buffer_slice"). The tensor starts at
 * (char*)ggml_backend_buffer_get_base(buffer) + offset + lwload_tensor_handle::offset. Several
 * tensors share one ggml buffer (drivers cap how many allocations may live at once), each in its
 * own slice of it. */
typedef struct lwload_ggml_slice {
  ggml_backend_buffer_t buffer;
  uint64_t offset; /* of the slice, from the buffer's base */
  uint64_t size;   /* of the slice */
} lwload_ggml_slice;

/* Opens the model at `path` (a file, or a folder holding one model), plans and loads it onto the
 * ggml device `device`, and describes every loaded tensor in a new ggml context. NULL on failure,
 * with *err as lwload.h says: LWLOAD_USAGE for a NULL path or device, LWLOAD_UNSUPPORTED for a
 * tensor ggml cannot hold (its name, type or shape), and every status lwload_load can give. */
LWLOAD_API lwload_ggml_model* lwload_ggml_load(const char* path, ggml_backend_dev_t device, lwload_error** err);

/* The model's ggml context: ggml_get_tensor(context, name) finds each loaded tensor. NULL for NULL. */
LWLOAD_API struct ggml_context* lwload_ggml_model_context(const lwload_ggml_model* m);

/* The loaded tensor named `name`; NULL when there is none (or it was not loaded, as an empty tensor
 * is not), and for a NULL model or name. */
LWLOAD_API struct ggml_tensor* lwload_ggml_model_tensor(const lwload_ggml_model* m, const char* name);

/* How many tensors the model's context holds (the loaded ones); 0 for NULL. */
LWLOAD_API size_t lwload_ggml_model_tensor_count(const lwload_ggml_model* m);

/* Frees the model (see Ownership above). Accepts NULL. */
LWLOAD_API void lwload_ggml_model_free(lwload_ggml_model* m);

/* An lwload device over `device`, for lwload_load (lwload/ggml.hpp, open_device): its tensors'
 * native handles are lwload_ggml_slice. Its shared buffers grow as lwload_load asks (from 1 MiB,
 * doubling up to 256 MiB), where lwload_ggml_load sizes them to the plan. NULL on failure, with *err. */
LWLOAD_API lwload_device* lwload_device_from_ggml(ggml_backend_dev_t device, lwload_error** err);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* LWLOAD_GGML_H */
