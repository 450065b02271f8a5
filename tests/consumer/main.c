/* The same app in C, through lwload.h: built as C11 against the subproject and the installed
 * library, so the C API stays consumable both ways. */
#include <lwload/lwload.h>

#include <stdio.h>

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: consumer_c MODEL\n");
    return 2;
  }
  lwload_error* err = NULL;
  lwload_manifest* manifest = lwload_manifest_open(argv[1], &err);
  lwload_device* device = manifest ? lwload_device_open("host", &err) : NULL;
  lwload_weights* weights = device ? lwload_load(manifest, device, NULL, &err) : NULL;
  int status = 1;
  if (weights) {
    lwload_tensor_info info = {.struct_size = sizeof info};
    lwload_tensor_handle handle = {.struct_size = sizeof handle};
    if (lwload_version_number() / 1000000 == LWLOAD_VERSION_MAJOR &&
        lwload_manifest_tensor(manifest, 0, &info, &err) == LWLOAD_OK &&
        lwload_weights_find(weights, info.name, &handle, &err) == LWLOAD_OK) {
      printf("%zu tensors loaded through the C API; %s is %s at offset %llu\n", lwload_manifest_tensor_count(manifest),
             handle.name, handle.placement, (unsigned long long)handle.offset);
      status = handle.bytes == info.bytes ? 0 : 1;
    }
  } else {
    fprintf(stderr, "consumer_c: %s\n", lwload_error_message(err));
  }
  lwload_error_free(err);
  lwload_weights_free(weights);
  lwload_device_free(device);
  lwload_manifest_free(manifest);
  return status;
}
