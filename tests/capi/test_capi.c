/* The C API from C11: manifests, errors as values, options by name, callbacks, loads on the host
 * and on an OpenCL context the test made itself (lwload adopts it), every byte compared with the
 * file. Plain C on purpose: it proves lwload.h is a C header and the library links from C.
 *
 *   test_capi SCRATCH_DIR */
#define _POSIX_C_SOURCE 200809L /* open, close, O_CLOEXEC under strict C11 */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lwload/lwload.h"

static int failures = 0;

#define CHECK(condition)                                                            \
  do {                                                                              \
    if (!(condition)) {                                                             \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #condition); \
      ++failures;                                                                   \
    }                                                                               \
  } while (0)

/* ---- a packed safetensors file, as the reference writer lays it out ---------------------------- */

typedef struct sample_tensor {
  const char* name;
  const char* dtype;
  size_t rank;
  int64_t shape[2];
  uint64_t bytes;
} sample_tensor;

/* Odd sizes, so tensors start at unaligned offsets right after one another. */
static const sample_tensor kTensors[] = {
    {"embed", "F32", 2, {3, 5}, 60},
    {"bias", "U8", 1, {7, 0}, 7},
    {"proj", "F16", 2, {13, 3}, 78},
    {"scale", "F32", 1, {1, 0}, 4},
};
enum { kTensorCount = sizeof kTensors / sizeof kTensors[0] };

static unsigned char* file_bytes = NULL; /* the whole file, as written */
static size_t file_size = 0;

static void write_sample(const char* path) {
  char header[1024];
  size_t used = 0;
  uint64_t offset = 0;
  used += (size_t)snprintf(header + used, sizeof header - used, "{");
  for (size_t i = 0; i < kTensorCount; ++i) {
    const sample_tensor* t = &kTensors[i];
    used += (size_t)snprintf(header + used, sizeof header - used, "%s\"%s\":{\"dtype\":\"%s\",\"shape\":[%lld",
                             i ? "," : "", t->name, t->dtype, (long long)t->shape[0]);
    if (t->rank == 2) used += (size_t)snprintf(header + used, sizeof header - used, ",%lld", (long long)t->shape[1]);
    used += (size_t)snprintf(header + used, sizeof header - used, "],\"data_offsets\":[%llu,%llu]}",
                             (unsigned long long)offset, (unsigned long long)(offset + t->bytes));
    offset += t->bytes;
  }
  used += (size_t)snprintf(header + used, sizeof header - used, "}");
  while (used % 8 != 0) header[used++] = ' '; /* the reference writer pads the header to 8 bytes */

  file_size = 8 + used + offset;
  file_bytes = malloc(file_size);
  uint64_t header_size = used;
  for (int b = 0; b < 8; ++b) file_bytes[b] = (unsigned char)(header_size >> (8 * b));
  memcpy(file_bytes + 8, header, used);
  for (size_t i = 8 + used; i < file_size; ++i) file_bytes[i] = (unsigned char)(i * 131u + 7u);

  FILE* out = fopen(path, "wb");
  CHECK(out != NULL);
  if (!out) exit(1);
  CHECK(fwrite(file_bytes, 1, file_size, out) == file_size);
  fclose(out);
}

/* ---- callbacks ----------------------------------------------------------------------------------- */

typedef struct ready_log {
  size_t calls;
  int cancel_at; /* return non-zero on this call (1-based); 0 = never */
  uint64_t last_done, last_total;
  size_t progress_calls;
} ready_log;

static int on_ready(void* user, const lwload_tensor_handle* t) {
  ready_log* log = user;
  ++log->calls;
  CHECK(t->name != NULL && t->native != NULL);
  return log->cancel_at != 0 && (int)log->calls == log->cancel_at;
}

static void on_progress(void* user, uint64_t done, uint64_t total) {
  ready_log* log = user;
  CHECK(done >= log->last_done && done <= total);
  log->last_done = done;
  log->last_total = total;
  ++log->progress_calls;
}

/* ---- checks -------------------------------------------------------------------------------------- */

static void check_manifest(const lwload_manifest* m) {
  CHECK(lwload_manifest_tensor_count(m) == kTensorCount);
  CHECK(strcmp(lwload_manifest_format(m), "safetensors") == 0);
  uint64_t total = 0;
  for (size_t i = 0; i < kTensorCount; ++i) {
    lwload_tensor_info info = {.struct_size = sizeof info};
    CHECK(lwload_manifest_tensor(m, i, &info, NULL) == LWLOAD_OK);
    CHECK(info.struct_size == sizeof info);
    CHECK(strstr(info.file, "capi.safetensors") != NULL);
    CHECK(strcmp(info.name, kTensors[i].name) == 0);
    CHECK(strcmp(info.dtype, kTensors[i].dtype) == 0);
    CHECK(info.rank == kTensors[i].rank);
    for (size_t d = 0; d < info.rank && d < 2; ++d) CHECK(info.shape[d] == kTensors[i].shape[d]);
    CHECK(info.bytes == kTensors[i].bytes);
    CHECK(strcmp(info.encoding, "raw") == 0);
    CHECK(info.flags == 0);
    total += info.bytes;
  }
  CHECK(lwload_manifest_total_bytes(m) == total);
  lwload_tensor_info none = {.struct_size = sizeof none};
  lwload_error* range = NULL;
  CHECK(lwload_manifest_tensor(m, kTensorCount, &none, &range) == LWLOAD_USAGE);
  CHECK(strstr(lwload_error_message(range), "out of range") != NULL);
  lwload_error_free(range);
}

static void check_errors(const char* scratch) {
  char path[4096];
  lwload_error* err = NULL;

  snprintf(path, sizeof path, "%s/missing.safetensors", scratch);
  CHECK(lwload_manifest_open(path, &err) == NULL);
  CHECK(lwload_error_status(err) == LWLOAD_IO);
  CHECK(strstr(lwload_error_message(err), "missing.safetensors") != NULL); /* names the file */
  lwload_error_free(err);

  /* A header promising more data than the file holds: bad input naming the file and tensor. */
  snprintf(path, sizeof path, "%s/truncated.safetensors", scratch);
  FILE* out = fopen(path, "wb");
  CHECK(out != NULL);
  if (out) {
    CHECK(fwrite(file_bytes, 1, file_size - 2, out) == file_size - 2);
    fclose(out);
  }
  err = NULL;
  CHECK(lwload_manifest_open(path, &err) == NULL);
  CHECK(lwload_error_status(err) == LWLOAD_BAD_INPUT);
  CHECK(strstr(lwload_error_message(err), "truncated.safetensors") != NULL);
  CHECK(strstr(lwload_error_message(err), "scale") != NULL); /* the tensor past the end */
  lwload_error_free(err);

  err = NULL;
  CHECK(lwload_device_open("no-such-backend", &err) == NULL);
  CHECK(lwload_error_status(err) == LWLOAD_USAGE);
  CHECK(strcmp(lwload_status_name(lwload_error_status(err)), "usage") == 0);
  lwload_error_free(err);

  CHECK(lwload_manifest_open(NULL, NULL) == NULL); /* err may be NULL */

  /* Caps on what a header may ask for: one tensor fewer than the file holds is refused. */
  snprintf(path, sizeof path, "%s/capi.safetensors", scratch);
  lwload_open_options* open = lwload_open_options_new();
  CHECK(lwload_open_options_set(open, "max-tensors", "3", NULL) == LWLOAD_OK);
  lwload_error* bad_value = NULL;
  CHECK(lwload_open_options_set(open, "max-tensors", "many", &bad_value) == LWLOAD_USAGE);
  CHECK(strstr(lwload_error_message(bad_value), "many") != NULL); /* the setters keep the message too */
  lwload_error_free(bad_value);
  CHECK(lwload_open_options_set(open, "no-such-option", "1", NULL) == LWLOAD_USAGE);
  err = NULL;
  CHECK(lwload_manifest_open_with(path, open, &err) == NULL);
  CHECK(lwload_error_status(err) == LWLOAD_BAD_INPUT);
  CHECK(strstr(lwload_error_message(err), "max_tensors") != NULL);
  lwload_error_free(err);
  CHECK(lwload_open_options_set(open, "max-tensors", "4", NULL) == LWLOAD_OK);
  CHECK(lwload_open_options_set(open, "allow-outside-links", "true", NULL) == LWLOAD_OK);
  lwload_manifest* capped = lwload_manifest_open_with(path, open, NULL);
  CHECK(capped != NULL && lwload_manifest_tensor_count(capped) == kTensorCount);
  lwload_manifest_free(capped);
  lwload_open_options_free(open);

  lwload_load_options* o = lwload_load_options_new();
  CHECK(lwload_load_options_set(o, "no-such-option", "1", NULL) == LWLOAD_USAGE);
  CHECK(lwload_load_options_set(o, "budget", "lots", NULL) == LWLOAD_USAGE);
  CHECK(lwload_load_options_set(o, "placement", "sideways", NULL) == LWLOAD_USAGE);
  CHECK(lwload_load_options_set(o, "budget", "1MiB", NULL) == LWLOAD_OK);
  CHECK(lwload_load_options_set(o, "--slots", "2", NULL) == LWLOAD_OK); /* the CLI spelling works too */
  CHECK(lwload_load_options_set(o, "lazy", "maybe", NULL) == LWLOAD_USAGE);
  lwload_load_options_free(o);
}

/* Every byte of every tensor, as `read` (host memory or a device read-back) sees it, against the file
 * (`file`, `size`: the bytes file_offset counts in). */
typedef int (*read_fn)(void* user, const lwload_tensor_handle* t, unsigned char* out);

static void check_bytes(const lwload_weights* w, read_fn read, void* user, const char* expected_native,
                        const unsigned char* file, size_t size) {
  CHECK(lwload_weights_tensor_count(w) == kTensorCount);
  for (size_t i = 0; i < kTensorCount; ++i) {
    lwload_tensor_handle t = {.struct_size = sizeof t};
    CHECK(lwload_weights_find(w, kTensors[i].name, &t, NULL) == LWLOAD_OK);
    CHECK(strcmp(t.native_type, expected_native) == 0);
    CHECK(t.bytes == kTensors[i].bytes);
    CHECK(t.file_offset + t.bytes <= size);
    unsigned char copy[256];
    CHECK(t.bytes <= sizeof copy);
    if (t.bytes > sizeof copy || read(user, &t, copy) != 0) continue;
    CHECK(memcmp(copy, file + t.file_offset, t.bytes) == 0);
  }
  lwload_tensor_handle none = {.struct_size = sizeof none};
  CHECK(lwload_weights_find(w, "no-such-tensor", &none, NULL) == LWLOAD_NOT_FOUND);
}

static int read_host(void* user, const lwload_tensor_handle* t, unsigned char* out) {
  (void)user;
  memcpy(out, (const unsigned char*)t->native + t->offset, t->bytes);
  return 0;
}

static void check_host(const lwload_manifest* m) {
  lwload_error* err = NULL;
  lwload_device* host = lwload_device_open("host", &err);
  CHECK(host != NULL && err == NULL);
  if (!host) return;
  CHECK(strcmp(lwload_device_id(host), "host:0") == 0);

  const char* placements[] = {"auto", "direct", "staged"};
  for (size_t p = 0; p < 3; ++p) {
    lwload_load_options* o = lwload_load_options_new();
    CHECK(lwload_load_options_set(o, "placement", placements[p], NULL) == LWLOAD_OK);
    ready_log log = {0, 0, 0, 0, 0};
    lwload_load_options_on_tensor_ready(o, on_ready, &log);
    lwload_load_options_on_progress(o, on_progress, &log);
    lwload_weights* w = lwload_load(m, host, o, &err);
    CHECK(w != NULL && err == NULL);
    if (w) {
      CHECK(log.calls == kTensorCount);
      CHECK(log.progress_calls > 0 && log.last_done == log.last_total);
      check_bytes(w, read_host, NULL, "host_ptr", file_bytes, file_size);
      lwload_tensor_handle first = {.struct_size = sizeof first};
      CHECK(lwload_weights_tensor(w, 0, &first, NULL) == LWLOAD_OK);
      CHECK(strcmp(first.placement, p == 0 ? "zero_copy" : p == 1 ? "direct" : "staged") == 0);
      CHECK(lwload_weights_verify(w, &err) == LWLOAD_OK);
      lwload_weights_free(w);
    }
    lwload_load_options_free(o);
  }

  /* A callback returning non-zero cancels: no weights, LWLOAD_CANCELLED, its tensor named. */
  lwload_load_options* o = lwload_load_options_new();
  ready_log log = {0, 2, 0, 0, 0};
  lwload_load_options_on_tensor_ready(o, on_ready, &log);
  err = NULL;
  CHECK(lwload_load(m, host, o, &err) == NULL);
  CHECK(lwload_error_status(err) == LWLOAD_CANCELLED);
  CHECK(strstr(lwload_error_message(err), kTensors[1].name) != NULL);
  lwload_error_free(err);
  lwload_load_options_free(o);

  /* A cancel raised (here before the load; test_faults raises one from another thread mid-load):
     LWLOAD_CANCELLED, nothing handed out. The options keep the token after the cancel is freed. */
  for (size_t p = 0; p < 2; ++p) {
    lwload_load_options* co = lwload_load_options_new();
    CHECK(lwload_load_options_set(co, "placement", p == 0 ? "auto" : "staged", NULL) == LWLOAD_OK);
    lwload_cancel* cancel = lwload_cancel_new();
    lwload_load_options_set_cancel(co, cancel);
    lwload_cancel_request(cancel);
    lwload_cancel_free(cancel);
    err = NULL;
    CHECK(lwload_load(m, host, co, &err) == NULL);
    CHECK(lwload_error_status(err) == LWLOAD_CANCELLED);
    lwload_error_free(err);
    lwload_load_options_free(co);
  }

  /* The weights keep what they need: the device may go first. */
  err = NULL;
  lwload_weights* w = lwload_load(m, host, NULL, &err);
  CHECK(w != NULL);
  lwload_device_free(host);
  if (w) check_bytes(w, read_host, NULL, "host_ptr", file_bytes, file_size);
  lwload_weights_free(w);
}

/* ---- OpenCL: the application's own context --------------------------------------------------------- */

typedef struct cl_app {
  cl_context context;
  cl_device_id device;
  cl_command_queue queue;
} cl_app;

static int read_cl(void* user, const lwload_tensor_handle* t, unsigned char* out) {
  cl_app* app = user;
  cl_mem mem = (cl_mem)t->native;
  cl_context owner = NULL;
  CHECK(clGetMemObjectInfo(mem, CL_MEM_CONTEXT, sizeof owner, &owner, NULL) == CL_SUCCESS);
  CHECK(owner == app->context); /* allocated (or imported) in the application's context */
  const cl_int status =
      clEnqueueReadBuffer(app->queue, mem, CL_TRUE, (size_t)t->offset, (size_t)t->bytes, out, 0, NULL, NULL);
  CHECK(status == CL_SUCCESS);
  return status == CL_SUCCESS ? 0 : -1;
}

static cl_uint reference_count(cl_context context) {
  cl_uint count = 0;
  CHECK(clGetContextInfo(context, CL_CONTEXT_REFERENCE_COUNT, sizeof count, &count, NULL) == CL_SUCCESS);
  return count;
}

/* PoCL when present (the suite's reference OpenCL), else the first platform with a device. */
static int make_cl_app(cl_app* app) {
  cl_platform_id platforms[8];
  cl_uint count = 0;
  if (clGetPlatformIDs(8, platforms, &count) != CL_SUCCESS || count == 0) return -1;
  cl_platform_id chosen = NULL;
  for (cl_uint p = 0; p < count && p < 8; ++p) {
    char name[256] = {0};
    clGetPlatformInfo(platforms[p], CL_PLATFORM_NAME, sizeof name - 1, name, NULL);
    cl_uint devices = 0;
    if (clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 0, NULL, &devices) != CL_SUCCESS || devices == 0) continue;
    if (!chosen || strstr(name, "Portable Computing Language")) chosen = platforms[p];
  }
  if (!chosen || clGetDeviceIDs(chosen, CL_DEVICE_TYPE_ALL, 1, &app->device, NULL) != CL_SUCCESS) return -1;
  cl_int status = CL_SUCCESS;
  app->context = clCreateContext(NULL, 1, &app->device, NULL, NULL, &status);
  if (status != CL_SUCCESS) return -1;
  app->queue = clCreateCommandQueueWithProperties(app->context, app->device, NULL, &status);
  return status == CL_SUCCESS ? 0 : -1;
}

static void check_opencl(const lwload_manifest* m) {
  cl_app app = {NULL, NULL, NULL};
  if (make_cl_app(&app) != 0) {
    printf("opencl: no platform with a device; the adopted-context checks were skipped\n");
    return;
  }
  const cl_uint references_before = reference_count(app.context);
  const char* placements[] = {"auto", "direct", "staged"};
  for (size_t p = 0; p < 3; ++p) {
    lwload_error* err = NULL;
    lwload_device* device = lwload_device_from_opencl(app.context, app.device, p == 1 ? NULL : app.queue, &err);
    CHECK(device != NULL && err == NULL);
    if (!device) {
      if (err) fprintf(stderr, "lwload_device_from_opencl: %s\n", lwload_error_message(err));
      lwload_error_free(err);
      break;
    }
    CHECK(strncmp(lwload_device_id(device), "opencl:", 7) == 0);
    lwload_load_options* o = lwload_load_options_new();
    CHECK(lwload_load_options_set(o, "placement", placements[p], NULL) == LWLOAD_OK);
    lwload_weights* w = lwload_load(m, device, o, &err);
    CHECK(w != NULL && err == NULL);
    if (err) fprintf(stderr, "lwload_load: %s\n", lwload_error_message(err));
    if (w) {
      check_bytes(w, read_cl, &app, "cl_mem", file_bytes, file_size);
      CHECK(lwload_weights_verify(w, NULL) == LWLOAD_OK);
    }
    lwload_weights_free(w);
    lwload_load_options_free(o);
    lwload_device_free(device);
    lwload_error_free(err);
  }
  /* lwload held references of its own only: the application's count is back where it was, and the
     application still owns (and releases) its context and queue. */
  CHECK(reference_count(app.context) == references_before);
  CHECK(clReleaseCommandQueue(app.queue) == CL_SUCCESS);
  CHECK(clReleaseContext(app.context) == CL_SUCCESS);

  lwload_error* err = NULL;
  CHECK(lwload_device_from_opencl(NULL, NULL, NULL, &err) == NULL);
  CHECK(lwload_error_status(err) == LWLOAD_USAGE);
  lwload_error_free(err);
}

/* The versions: the headers' macros agree with the library's answers, and a program built against
 * these headers accepts this library (the rule lwload.h states). */
static void check_version(void) {
  char expected[32];
  snprintf(expected, sizeof expected, "%d.%d.%d", LWLOAD_VERSION_MAJOR, LWLOAD_VERSION_MINOR, LWLOAD_VERSION_PATCH);
  CHECK(strcmp(lwload_version(), expected) == 0);
  CHECK(lwload_version_number() == LWLOAD_VERSION_NUMBER);
  CHECK(lwload_version_number() / 1000000 == LWLOAD_VERSION_MAJOR && lwload_version_number() >= LWLOAD_VERSION_NUMBER);
}

/* A program built against an older lwload.h passes a shorter struct: the library fills what fits,
 * writes nothing past it, and says how much it filled; a struct_size too small for any version is
 * LWLOAD_USAGE. */
typedef struct older_tensor_info { /* lwload_tensor_info as a first version without `rank` onward */
  size_t struct_size;
  const char* name;
  const char* dtype;
} older_tensor_info;
typedef struct older_tensor_handle {
  size_t struct_size;
  const char* name;
  const char* placement;
} older_tensor_handle;

/* Whether the library wrote nothing into the bytes after a struct (memset to 0xa5 before). */
static int untouched(const unsigned char* canary, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (canary[i] != 0xa5) return 0;
  return 1;
}

static void check_struct_sizes(const lwload_manifest* m) {
  struct {
    older_tensor_info info;
    unsigned char canary[64];
  } old;
  memset(&old, 0xa5, sizeof old);
  old.info.struct_size = sizeof old.info;
  CHECK(lwload_manifest_tensor(m, 0, (lwload_tensor_info*)&old.info, NULL) == LWLOAD_OK);
  CHECK(old.info.struct_size == sizeof old.info);
  CHECK(strcmp(old.info.name, kTensors[0].name) == 0);
  CHECK(strcmp(old.info.dtype, kTensors[0].dtype) == 0);
  CHECK(untouched(old.canary, sizeof old.canary));
  /* Too small for any version: refused, nothing written. */
  lwload_tensor_info tiny = {.struct_size = sizeof(size_t)};
  lwload_error* err = NULL;
  CHECK(lwload_manifest_tensor(m, 0, &tiny, &err) == LWLOAD_USAGE);
  CHECK(strstr(lwload_error_message(err), "struct_size") != NULL);
  CHECK(tiny.name == NULL);
  lwload_error_free(err);
  /* A newer program's longer struct: the library fills what it knows and says so. */
  struct {
    lwload_tensor_info info;
    uint64_t added_later;
  } newer = {.info = {.struct_size = sizeof newer}, .added_later = 7};
  CHECK(lwload_manifest_tensor(m, 0, &newer.info, NULL) == LWLOAD_OK);
  CHECK(newer.info.struct_size == sizeof(lwload_tensor_info));
  CHECK(newer.added_later == 7);
  CHECK(LWLOAD_HAS_FIELD(&newer.info, lwload_tensor_info, file));

  lwload_device* host = lwload_device_open("host", NULL);
  lwload_weights* w = lwload_load(m, host, NULL, NULL);
  CHECK(w != NULL);
  if (w) {
    struct {
      older_tensor_handle handle;
      unsigned char canary[64];
    } old_handle;
    memset(&old_handle, 0xa5, sizeof old_handle);
    old_handle.handle.struct_size = sizeof old_handle.handle;
    CHECK(lwload_weights_find(w, kTensors[0].name, (lwload_tensor_handle*)&old_handle.handle, NULL) == LWLOAD_OK);
    CHECK(strcmp(old_handle.handle.placement, "zero_copy") == 0);
    CHECK(untouched(old_handle.canary, sizeof old_handle.canary));
  }
  lwload_weights_free(w);
  lwload_device_free(host);
}

/* A sparse TFLite model (MediaPipe's, from tests/data): the stored values by default, flagged; with
 * "densify", the dense tensor. Both load on the host and verify. */
static void check_sparse(void) {
  const char* data = getenv("LWLOAD_TESTDATA");
  CHECK(data != NULL);
  if (!data) return;
  char path[4096];
  snprintf(path, sizeof path, "%s/tflite/face_detection_full_range_sparse.tflite", data);
  for (int densify = 0; densify < 2; ++densify) {
    lwload_open_options* o = lwload_open_options_new();
    CHECK(lwload_open_options_set(o, "densify", densify ? "true" : "false", NULL) == LWLOAD_OK);
    lwload_error* err = NULL;
    lwload_manifest* m = lwload_manifest_open_with(path, o, &err);
    lwload_open_options_free(o);
    CHECK(m != NULL);
    if (!m) {
      fprintf(stderr, "%s\n", lwload_error_message(err));
      lwload_error_free(err);
      return;
    }
    size_t sparse = 0;
    for (size_t i = 0; i < lwload_manifest_tensor_count(m); ++i) {
      lwload_tensor_info info = {.struct_size = sizeof info};
      CHECK(lwload_manifest_tensor(m, i, &info, NULL) == LWLOAD_OK);
      if (!(info.flags & LWLOAD_TENSOR_SPARSE)) continue;
      ++sparse;
      CHECK(strcmp(info.encoding, densify ? "sparse" : "raw") == 0);
      if (strcmp(info.name, "model_1/model/conv2d_1/Conv2D_dequantize") == 0)
        CHECK(info.bytes == (densify ? 8u * 32 * 2 : 77u * 2)); /* float16 [8, 1, 1, 32], 77 stored */
    }
    CHECK(sparse == 46);
    lwload_device* host = lwload_device_open("host", NULL);
    lwload_weights* w = lwload_load(m, host, NULL, NULL);
    CHECK(w != NULL);
    CHECK(lwload_weights_verify(w, NULL) == LWLOAD_OK);
    lwload_weights_free(w);
    lwload_device_free(host);
    lwload_manifest_free(m);
  }
}

/* lwload_load_consume takes the manifest over: no copy, and the caller must not free it. */
/* The model inside a container at an odd offset, through a descriptor (as an Android app hands over
 * an uncompressed APK asset), and from the caller's memory: zero-copy on the host, every byte right. */
static void check_sources(const char* scratch) {
  enum { kPrefix = 1001, kSuffix = 333 };
  char path[4096];
  snprintf(path, sizeof path, "%s/app.apk", scratch);
  const size_t container_size = kPrefix + file_size + kSuffix;
  unsigned char* container = malloc(container_size);
  memset(container, 0xEE, kPrefix);
  memcpy(container + kPrefix, file_bytes, file_size);
  memset(container + kPrefix + file_size, 0xDD, kSuffix);
  FILE* out = fopen(path, "wb");
  CHECK(out != NULL);
  if (!out) return;
  CHECK(fwrite(container, 1, container_size, out) == container_size);
  fclose(out);

  lwload_error* err = NULL;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  CHECK(fd >= 0);
  lwload_manifest* from_fd = lwload_manifest_open_fd(fd, kPrefix, file_size, NULL, NULL, &err);
  close(fd); /* lwload keeps its own duplicate */
  lwload_manifest* from_memory = lwload_manifest_open_memory(file_bytes, file_size, "safetensors", NULL, &err);
  CHECK(from_fd != NULL && from_memory != NULL && err == NULL);
  if (err) fprintf(stderr, "%s\n", lwload_error_message(err));
  lwload_device* host = lwload_device_open("host", NULL);
  const lwload_manifest* sources[] = {from_fd, from_memory};
  for (int s = 0; s < 2 && host; ++s) {
    if (!sources[s]) continue;
    CHECK(lwload_manifest_tensor_count(sources[s]) == kTensorCount);
    lwload_weights* w = lwload_load(sources[s], host, NULL, &err);
    CHECK(w != NULL && err == NULL);
    if (!w) continue;
    /* From a descriptor, offsets count in the containing file (where the app's asset sits). */
    if (s == 0) check_bytes(w, read_host, NULL, "host_ptr", container, container_size);
    else check_bytes(w, read_host, NULL, "host_ptr", file_bytes, file_size);
    for (size_t i = 0; i < kTensorCount; ++i) {
      lwload_tensor_handle t = {.struct_size = sizeof t};
      CHECK(lwload_weights_find(w, kTensors[i].name, &t, NULL) == LWLOAD_OK);
      CHECK(strcmp(t.placement, "zero_copy") == 0);
      /* From memory, zero-copy is the caller's own bytes. */
      if (s == 1) CHECK((const unsigned char*)t.native + t.offset == file_bytes + t.file_offset);
    }
    CHECK(lwload_weights_verify(w, NULL) == LWLOAD_OK);
    lwload_weights_free(w);
  }
  /* Bytes that are not inside the file, and a descriptor that is not open. */
  fd = open(path, O_RDONLY | O_CLOEXEC);
  CHECK(lwload_manifest_open_fd(fd, kPrefix, file_size + kSuffix + 1, NULL, NULL, &err) == NULL);
  CHECK(lwload_error_status(err) == LWLOAD_BAD_INPUT);
  CHECK(strstr(lwload_error_message(err), "not inside the file") != NULL);
  lwload_error_free(err);
  err = NULL;
  close(fd);
  CHECK(lwload_manifest_open_fd(-1, 0, 16, NULL, NULL, &err) == NULL);
  CHECK(lwload_error_status(err) == LWLOAD_USAGE);
  lwload_error_free(err);
  lwload_device_free(host);
  lwload_manifest_free(from_fd);
  lwload_manifest_free(from_memory);
  free(container);
}

static void check_consume(const char* path) {
  lwload_manifest* m = lwload_manifest_open(path, NULL);
  lwload_device* host = lwload_device_open("host", NULL);
  lwload_weights* w = lwload_load_consume(m, host, NULL, NULL);
  CHECK(w != NULL);
  CHECK(lwload_weights_tensor_count(w) == kTensorCount);
  CHECK(lwload_weights_verify(w, NULL) == LWLOAD_OK);
  lwload_weights_free(w);
  /* Consumed on failure too (an unknown option is no failure here; a NULL device is). */
  lwload_error* err = NULL;
  CHECK(lwload_load_consume(lwload_manifest_open(path, NULL), NULL, NULL, &err) == NULL);
  CHECK(lwload_error_status(err) == LWLOAD_USAGE);
  lwload_error_free(err);
  lwload_device_free(host);
}

/* A tensor named "a\0b" beside one named "a": as C strings both read "a", so lwload_weights_find("a")
 * could reach the wrong one. The C API refuses the model, naming the tensor, from a path and from
 * memory alike. */
static void check_nul_names(const char* scratch) {
  static const char header[] =
      "{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]},"
      "\"a\\u0000b\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[2,4]}}";
  const uint64_t length = sizeof header - 1;
  unsigned char file[sizeof header - 1 + 8 + 4];
  for (int i = 0; i < 8; ++i) file[i] = (unsigned char)(length >> (8 * i));
  memcpy(file + 8, header, length);
  memcpy(file + 8 + length, "\x01\x02\x03\x04", 4);
  char path[4096];
  snprintf(path, sizeof path, "%s/nul.safetensors", scratch);
  FILE* out = fopen(path, "wb");
  CHECK(out != NULL);
  if (!out) return;
  CHECK(fwrite(file, 1, sizeof file, out) == sizeof file);
  fclose(out);
  lwload_error* err = NULL;
  CHECK(lwload_manifest_open(path, &err) == NULL);
  CHECK(lwload_error_status(err) == LWLOAD_BAD_INPUT);
  CHECK(strstr(lwload_error_message(err), "nul.safetensors") != NULL);
  CHECK(strstr(lwload_error_message(err), "tensor #1 'a\\x00b'") != NULL);
  CHECK(strstr(lwload_error_message(err), "NUL byte") != NULL);
  lwload_error_free(err);
  err = NULL;
  CHECK(lwload_manifest_open_memory(file, sizeof file, "safetensors", NULL, &err) == NULL);
  CHECK(lwload_error_status(err) == LWLOAD_BAD_INPUT);
  lwload_error_free(err);
}

/* A relative path while the working folder has been deleted (std::filesystem::absolute fails) is an
 * I/O status naming the path. */
static void check_system_errors(const char* scratch) {
  char gone[4096], back[4096];
  snprintf(gone, sizeof gone, "%s/capi-deleted-cwd", scratch);
  CHECK(getcwd(back, sizeof back) != NULL);
  CHECK(mkdir(gone, 0700) == 0);
  CHECK(chdir(gone) == 0);
  CHECK(rmdir(gone) == 0);
  lwload_error* err = NULL;
  CHECK(lwload_manifest_open("m.safetensors", &err) == NULL);
  CHECK(lwload_error_status(err) == LWLOAD_IO);
  CHECK(strstr(lwload_error_message(err), "m.safetensors: cannot be resolved against the working folder") != NULL);
  lwload_error_free(err);
  CHECK(chdir(back) == 0);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_capi SCRATCH_DIR\n");
    return 2;
  }
  char path[4096];
  snprintf(path, sizeof path, "%s/capi.safetensors", argv[1]);
  write_sample(path);
  printf("liblwload %s\n", lwload_version());

  lwload_error* err = NULL;
  lwload_manifest* m = lwload_manifest_open(path, &err);
  CHECK(m != NULL && err == NULL);
  if (!m) {
    fprintf(stderr, "%s\n", lwload_error_message(err));
    return 1;
  }
  check_version();
  check_manifest(m);
  check_struct_sizes(m);
  check_consume(path);
  check_sparse();
  check_sources(argv[1]);
  check_errors(argv[1]);
  check_system_errors(argv[1]);
  check_nul_names(argv[1]);
  check_host(m);
  check_opencl(m);
  lwload_manifest_free(m);
  free(file_bytes);

  if (failures) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("all C API checks passed\n");
  return 0;
}
