/* The adapter's C API (lwload/ggml.h) from C11, on ggml's CPU device: a model loaded and found by
 * name through ggml's own lookup, every byte compared; a name ggml cannot hold refused with its
 * status and message; NULL arguments; and lwload_load on lwload_device_from_ggml, whose handles are
 * lwload_ggml_slice.
 *
 *   test_ggml_c SCRATCH_DIR */
#define _POSIX_C_SOURCE 200809L /* mkdir */
#include <sys/stat.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ggml-backend.h>
#include <ggml.h>

#include "lwload/ggml.h"
#include "lwload/lwload.h"

static int failures = 0;
#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

/* A safetensors file of two tensors whose names are given with their lengths (NUL allowed). */
static void write_model(const char* path, const char* key_a, const char* key_b, const float* a, const int32_t* b) {
  char header[256];
  int n = snprintf(header, sizeof header,
                   "{\"%s\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
                   "\"%s\":{\"dtype\":\"I32\",\"shape\":[4],\"data_offsets\":[24,40]}}",
                   key_a, key_b);
  while ((8 + n) % 8) header[n++] = ' ';
  FILE* f = fopen(path, "wb");
  if (!f) {
    perror(path);
    exit(1);
  }
  uint64_t length = (uint64_t)n;
  fwrite(&length, 8, 1, f);
  fwrite(header, 1, (size_t)n, f);
  fwrite(a, sizeof(float), 6, f);
  fwrite(b, sizeof(int32_t), 4, f);
  fclose(f);
}

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  mkdir(argv[1], 0755); /* may exist */
  ggml_backend_load_all_from_path(LWLOAD_GGML_BACKEND_DIR);
  ggml_backend_dev_t cpu = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
  if (!cpu) {
    fprintf(stderr, "no ggml CPU device\n");
    return 1;
  }
  const float a[6] = {1.5f, -2.0f, 3.25f, 4.0f, 5.5f, -6.75f};
  const int32_t b[4] = {7, -8, 2147483647, -2147483647 - 1};
  char path[4096];

  /* A model loads; ggml_get_tensor finds each tensor by its own name, with its bytes. */
  snprintf(path, sizeof path, "%s/c_api.safetensors", argv[1]);
  write_model(path, "weight", "index", a, b);
  lwload_error* err = NULL;
  lwload_ggml_model* m = lwload_ggml_load(path, cpu, &err);
  CHECK(m != NULL && err == NULL);
  if (m) {
    CHECK(lwload_ggml_model_tensor_count(m) == 2);
    struct ggml_tensor* w = ggml_get_tensor(lwload_ggml_model_context(m), "weight");
    CHECK(w != NULL && w == lwload_ggml_model_tensor(m, "weight"));
    if (w) {
      float got[6];
      CHECK(w->type == GGML_TYPE_F32 && w->ne[0] == 3 && w->ne[1] == 2);
      ggml_backend_tensor_get(w, got, 0, sizeof got);
      CHECK(memcmp(got, a, sizeof got) == 0);
    }
    struct ggml_tensor* i = lwload_ggml_model_tensor(m, "index");
    CHECK(i != NULL);
    if (i) {
      int32_t got[4];
      CHECK(i->type == GGML_TYPE_I32 && i->ne[0] == 4);
      ggml_backend_tensor_get(i, got, 0, sizeof got);
      CHECK(memcmp(got, b, sizeof got) == 0);
    }
    CHECK(lwload_ggml_model_tensor(m, "absent") == NULL);
    CHECK(lwload_ggml_model_tensor(m, NULL) == NULL);
  }
  lwload_ggml_model_free(m);

  /* "w\0evil" before "w": refused, naming the tensor, not loaded as a second "w". */
  snprintf(path, sizeof path, "%s/c_api_nul.safetensors", argv[1]);
  write_model(path, "w\\u0000evil", "w", a, b);
  err = NULL;
  m = lwload_ggml_load(path, cpu, &err);
  CHECK(m == NULL);
  CHECK(lwload_error_status(err) == LWLOAD_UNSUPPORTED);
  CHECK(strstr(lwload_error_message(err), "tensor 'w\\x00evil'") != NULL);
  CHECK(strstr(lwload_error_message(err), "NUL") != NULL);
  lwload_error_free(err);

  /* NULL arguments: LWLOAD_USAGE; getters and free accept NULL. */
  err = NULL;
  CHECK(lwload_ggml_load(NULL, cpu, &err) == NULL && lwload_error_status(err) == LWLOAD_USAGE);
  lwload_error_free(err);
  err = NULL;
  CHECK(lwload_ggml_load(path, NULL, &err) == NULL && lwload_error_status(err) == LWLOAD_USAGE);
  lwload_error_free(err);
  CHECK(lwload_ggml_load(path, NULL, NULL) == NULL);
  CHECK(lwload_ggml_model_context(NULL) == NULL && lwload_ggml_model_tensor_count(NULL) == 0);
  lwload_ggml_model_free(NULL);

  /* lwload_load on a ggml device, zero-copy (the CPU imports the file's pages) and direct (slices of
   * one shared buffer): each handle is a slice of a ggml buffer holding the tensor. */
  snprintf(path, sizeof path, "%s/c_api.safetensors", argv[1]);
  const char* placements[2] = {"auto", "direct"};
  for (int p = 0; p < 2; ++p) {
    err = NULL;
    lwload_device* d = lwload_device_from_ggml(cpu, &err);
    lwload_manifest* manifest = lwload_manifest_open(path, &err);
    lwload_load_options* o = lwload_load_options_new();
    CHECK(d != NULL && manifest != NULL && o != NULL);
    CHECK(lwload_load_options_set(o, "placement", placements[p], &err) == LWLOAD_OK);
    lwload_weights* weights = d && manifest ? lwload_load(manifest, d, o, &err) : NULL;
    CHECK(weights != NULL);
    if (weights) {
      lwload_tensor_handle h = {.struct_size = sizeof h};
      CHECK(lwload_weights_find(weights, "index", &h, &err) == LWLOAD_OK);
      CHECK(strcmp(h.placement, p == 0 ? "zero_copy" : "direct") == 0);
      CHECK(strcmp(h.native_type, "ggml_buffer_slice") == 0);
      const lwload_ggml_slice* slice = (const lwload_ggml_slice*)h.native;
      CHECK(slice != NULL && h.offset + h.bytes <= slice->size);
      if (slice) {
        if (p == 1) CHECK(slice->offset > 0); /* the second slice of the shared buffer */
        const char* base = (const char*)ggml_backend_buffer_get_base(slice->buffer);
        CHECK(memcmp(base + slice->offset + h.offset, b, sizeof b) == 0); /* a host buffer: readable in place */
      }
    }
    lwload_weights_free(weights);
    lwload_load_options_free(o);
    lwload_manifest_free(manifest);
    lwload_device_free(d);
    lwload_error_free(err);
  }

  if (failures) fprintf(stderr, "%d checks failed\n", failures);
  else printf("test_ggml_c: all checks passed\n");
  return failures ? 1 : 0;
}
