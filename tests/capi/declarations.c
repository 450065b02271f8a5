/* The C API's LWLOAD_1 declarations, redeclared against lwload.h: an incompatible change to any of
 * them, to an enum value or to the layout of a struct's first-version fields stops this file (and
 * the build) from compiling, so a program written against them keeps compiling and running
 * unchanged. New functions and trailing struct fields may come; these may not change. Nothing here
 * runs. */
#include <stddef.h>
#include <stdint.h>

#include "lwload/lwload.h"

const char* lwload_version(void);
uint32_t lwload_version_number(void);
lwload_status lwload_error_status(const lwload_error* e);
const char* lwload_error_message(const lwload_error* e);
void lwload_error_free(lwload_error* e);
const char* lwload_status_name(lwload_status status);
lwload_manifest* lwload_manifest_open(const char* path, lwload_error** err);
lwload_open_options* lwload_open_options_new(void);
void lwload_open_options_free(lwload_open_options* o);
lwload_status lwload_open_options_set(lwload_open_options* o, const char* key, const char* value, lwload_error** err);
lwload_manifest* lwload_manifest_open_with(const char* path, const lwload_open_options* o, lwload_error** err);
lwload_manifest* lwload_manifest_open_fd(int fd, uint64_t offset, uint64_t length, const char* format,
                                         const lwload_open_options* o, lwload_error** err);
lwload_manifest* lwload_manifest_open_memory(const void* data, size_t size, const char* format,
                                             const lwload_open_options* o, lwload_error** err);
void lwload_manifest_free(lwload_manifest* m);
size_t lwload_manifest_tensor_count(const lwload_manifest* m);
lwload_status lwload_manifest_tensor(const lwload_manifest* m, size_t index, lwload_tensor_info* out,
                                     lwload_error** err);
const char* lwload_manifest_format(const lwload_manifest* m);
uint64_t lwload_manifest_total_bytes(const lwload_manifest* m);
lwload_device* lwload_device_open(const char* spec, lwload_error** err);
lwload_device* lwload_device_from_opencl(void* cl_context, void* cl_device_id, void* cl_command_queue,
                                         lwload_error** err);
void lwload_device_free(lwload_device* d);
const char* lwload_device_id(const lwload_device* d);
const char* lwload_device_name(const lwload_device* d);
lwload_load_options* lwload_load_options_new(void);
void lwload_load_options_free(lwload_load_options* o);
lwload_status lwload_load_options_set(lwload_load_options* o, const char* key, const char* value, lwload_error** err);
void lwload_load_options_on_tensor_ready(lwload_load_options* o, int (*fn)(void* user, const lwload_tensor_handle* t),
                                         void* user);
void lwload_load_options_on_progress(lwload_load_options* o, void (*fn)(void* user, uint64_t done, uint64_t total),
                                     void* user);
lwload_cancel* lwload_cancel_new(void);
void lwload_cancel_request(lwload_cancel* c);
void lwload_cancel_free(lwload_cancel* c);
void lwload_load_options_set_cancel(lwload_load_options* o, lwload_cancel* c);
lwload_weights* lwload_load(const lwload_manifest* m, lwload_device* d, const lwload_load_options* o,
                            lwload_error** err);
lwload_weights* lwload_load_consume(lwload_manifest* m, lwload_device* d, const lwload_load_options* o,
                                    lwload_error** err);
lwload_status lwload_weights_find(const lwload_weights* w, const char* name, lwload_tensor_handle* out,
                                  lwload_error** err);
size_t lwload_weights_tensor_count(const lwload_weights* w);
lwload_status lwload_weights_tensor(const lwload_weights* w, size_t index, lwload_tensor_handle* out,
                                    lwload_error** err);
lwload_status lwload_weights_verify(const lwload_weights* w, lwload_error** err);
void lwload_weights_free(lwload_weights* w);

_Static_assert(LWLOAD_OK == 0 && LWLOAD_BAD_INPUT == 1 && LWLOAD_IO == 2 && LWLOAD_DEVICE == 3 &&
                   LWLOAD_OUT_OF_MEMORY == 4 && LWLOAD_DOES_NOT_FIT == 5 && LWLOAD_CANCELLED == 6 &&
                   LWLOAD_USAGE == 7 && LWLOAD_UNSUPPORTED == 8 && LWLOAD_NOT_FOUND == 9,
               "lwload_status values of LWLOAD_1");
// The layouts per data model: LP64 (x86-64, aarch64), and ILP32 with 8-byte-aligned 64-bit
// integers (32-bit ARM EABI: armhf, armeabi-v7a).
#if UINTPTR_MAX > 0xFFFFFFFFu
_Static_assert(offsetof(lwload_tensor_info, struct_size) == 0 && offsetof(lwload_tensor_info, name) == 8 &&
                   offsetof(lwload_tensor_info, bytes) == 40 && offsetof(lwload_tensor_info, file) == 48,
               "lwload_tensor_info's LWLOAD_1 layout");
_Static_assert(offsetof(lwload_tensor_handle, struct_size) == 0 && offsetof(lwload_tensor_handle, name) == 8 &&
                   offsetof(lwload_tensor_handle, native) == 32 && offsetof(lwload_tensor_handle, file_offset) == 56,
               "lwload_tensor_handle's LWLOAD_1 layout");
#elif defined(__ARM_EABI__)
_Static_assert(offsetof(lwload_tensor_info, struct_size) == 0 && offsetof(lwload_tensor_info, name) == 4 &&
                   offsetof(lwload_tensor_info, bytes) == 24 && offsetof(lwload_tensor_info, file) == 32,
               "lwload_tensor_info's LWLOAD_1 layout (32-bit ARM)");
_Static_assert(offsetof(lwload_tensor_handle, struct_size) == 0 && offsetof(lwload_tensor_handle, name) == 4 &&
                   offsetof(lwload_tensor_handle, native) == 16 && offsetof(lwload_tensor_handle, file_offset) == 40,
               "lwload_tensor_handle's LWLOAD_1 layout (32-bit ARM)");
#endif
_Static_assert(LWLOAD_VERSION_NUMBER ==
                   LWLOAD_VERSION_MAJOR * 1000000 + LWLOAD_VERSION_MINOR * 1000 + LWLOAD_VERSION_PATCH,
               "LWLOAD_VERSION_NUMBER's encoding");
