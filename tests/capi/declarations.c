/* The C API's declarations exactly as issue 10 fixed them, redeclared against lwload.h: an
 * incompatible change to any of them stops this file (and the build) from compiling, so an app
 * written against them keeps compiling unchanged. Nothing here runs. */
#include <stddef.h>

#include "lwload/lwload.h"

const char* lwload_version(void);
lwload_status lwload_error_status(const lwload_error* e);
const char* lwload_error_message(const lwload_error* e);
void lwload_error_free(lwload_error* e);
lwload_manifest* lwload_manifest_open(const char* path, lwload_error** err);
void lwload_manifest_free(lwload_manifest* m);
size_t lwload_manifest_tensor_count(const lwload_manifest* m);
int lwload_manifest_tensor(const lwload_manifest* m, size_t index, lwload_tensor_info* out);
lwload_device* lwload_device_open(const char* spec, lwload_error** err);
lwload_device* lwload_device_from_opencl(void* cl_context, void* cl_device_id, void* cl_command_queue,
                                         lwload_error** err);
void lwload_device_free(lwload_device* d);
lwload_load_options* lwload_load_options_new(void);
void lwload_load_options_free(lwload_load_options* o);
lwload_status lwload_load_options_set(lwload_load_options* o, const char* key, const char* value);
void lwload_load_options_on_tensor_ready(lwload_load_options* o, int (*fn)(void* user, const lwload_tensor_handle* t),
                                         void* user);
void lwload_load_options_on_progress(lwload_load_options* o, void (*fn)(void* user, uint64_t done, uint64_t total),
                                     void* user);
lwload_weights* lwload_load(const lwload_manifest* m, lwload_device* d, const lwload_load_options* o,
                            lwload_error** err);
int lwload_weights_find(const lwload_weights* w, const char* name, lwload_tensor_handle* out);
void lwload_weights_free(lwload_weights* w);

_Static_assert(LWLOAD_OK == 0 && LWLOAD_BAD_INPUT == 1 && LWLOAD_IO == 2 && LWLOAD_DEVICE == 3 &&
                   LWLOAD_OUT_OF_MEMORY == 4 && LWLOAD_DOES_NOT_FIT == 5 && LWLOAD_CANCELLED == 6 &&
                   LWLOAD_USAGE == 7 && LWLOAD_UNSUPPORTED == 8,
               "lwload_status values in the issue's order");
_Static_assert(offsetof(lwload_tensor_info, name) == 0 && offsetof(lwload_tensor_info, bytes) == 32,
               "lwload_tensor_info fields in the issue's order");
_Static_assert(offsetof(lwload_tensor_handle, name) == 0 && offsetof(lwload_tensor_handle, native) == 24 &&
                   offsetof(lwload_tensor_handle, file_offset) == 48,
               "lwload_tensor_handle fields in the issue's order");
