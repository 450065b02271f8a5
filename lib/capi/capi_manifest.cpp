// C API manifests: open_manifest behind lwload_manifest, tensors described in C structs that point
// into the C++ manifest (valid while it lives).
#include "capi/capi_objects.hpp"
#include "lwload/error.hpp"
#include "lwload/manifest.hpp"

using lwload::capi::guarded;
using lwload::capi::require;

extern "C" {

lwload_manifest* lwload_manifest_open(const char* path, lwload_error** err) {
  return guarded(err, static_cast<lwload_manifest*>(nullptr), [&] {
    require(path, "lwload_manifest_open", "path");
    return new lwload_manifest{lwload::open_manifest(path)};
  });
}

void lwload_manifest_free(lwload_manifest* m) { delete m; }

size_t lwload_manifest_tensor_count(const lwload_manifest* m) { return m ? m->manifest.tensors.size() : 0; }

int lwload_manifest_tensor(const lwload_manifest* m, size_t index, lwload_tensor_info* out) {
  if (!m || !out || index >= m->manifest.tensors.size()) return -1;
  const lwload::TensorInfo& t = m->manifest.tensors[index];
  // dtype names are string literals (lib/core/dtype.cpp), so their views are NUL-terminated.
  *out = lwload_tensor_info{t.name.c_str(), lwload::dtype_name(t.dtype).data(), t.shape.size(), t.shape.data(),
                            t.bytes};
  return 0;
}

const char* lwload_manifest_format(const lwload_manifest* m) { return m ? m->manifest.format.c_str() : ""; }

uint64_t lwload_manifest_total_bytes(const lwload_manifest* m) { return m ? m->manifest.total_bytes() : 0; }

}  // extern "C"
