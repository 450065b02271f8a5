#include "backends/cuda/cuda_driver.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

#include "lwload/error.hpp"

namespace lwload::cuda {
namespace {

struct Loaded {
  Driver driver{};
  bool ok = false;
  std::string why;
};

template <typename F>
bool resolve(void* library, const char* name, F& out, std::string& why) {
  out = reinterpret_cast<F>(::dlsym(library, name));
  if (!out) why = str("the driver lacks ", name);
  return out != nullptr;
}

Loaded load() {
  Loaded l;
  const char* override_path = std::getenv("LWLOAD_CUDA_LIBRARY");
  const char* path = override_path && *override_path ? override_path : "libcuda.so.1";
  // Never closed: the driver's own threads and atexit handlers outlive any lwload object.
  void* library = ::dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char* error = ::dlerror();
    l.why = str("no NVIDIA driver: ", error ? error : path);
    return l;
  }
  Driver& d = l.driver;
  std::string& why = l.why;
  const bool all =
      resolve(library, "cuInit", d.cuInit, why) && resolve(library, "cuDriverGetVersion", d.cuDriverGetVersion, why) &&
      resolve(library, "cuGetErrorName", d.cuGetErrorName, why) &&
      resolve(library, "cuDeviceGetCount", d.cuDeviceGetCount, why) &&
      resolve(library, "cuDeviceGet", d.cuDeviceGet, why) && resolve(library, "cuDeviceGetName", d.cuDeviceGetName, why) &&
      resolve(library, "cuDeviceTotalMem_v2", d.cuDeviceTotalMem_v2, why) &&
      resolve(library, "cuDeviceGetAttribute", d.cuDeviceGetAttribute, why) &&
      resolve(library, "cuDevicePrimaryCtxRetain", d.cuDevicePrimaryCtxRetain, why) &&
      resolve(library, "cuDevicePrimaryCtxRelease_v2", d.cuDevicePrimaryCtxRelease_v2, why) &&
      resolve(library, "cuCtxPushCurrent_v2", d.cuCtxPushCurrent_v2, why) &&
      resolve(library, "cuCtxPopCurrent_v2", d.cuCtxPopCurrent_v2, why) &&
      resolve(library, "cuMemAlloc_v2", d.cuMemAlloc_v2, why) && resolve(library, "cuMemFree_v2", d.cuMemFree_v2, why) &&
      resolve(library, "cuMemAllocHost_v2", d.cuMemAllocHost_v2, why) &&
      resolve(library, "cuMemFreeHost", d.cuMemFreeHost, why) &&
      resolve(library, "cuMemHostRegister_v2", d.cuMemHostRegister_v2, why) &&
      resolve(library, "cuMemHostUnregister", d.cuMemHostUnregister, why) &&
      resolve(library, "cuMemHostGetDevicePointer_v2", d.cuMemHostGetDevicePointer_v2, why) &&
      resolve(library, "cuMemcpyHtoDAsync_v2", d.cuMemcpyHtoDAsync_v2, why) &&
      resolve(library, "cuMemcpyDtoH_v2", d.cuMemcpyDtoH_v2, why) &&
      resolve(library, "cuStreamCreate", d.cuStreamCreate, why) &&
      resolve(library, "cuStreamDestroy_v2", d.cuStreamDestroy_v2, why) &&
      resolve(library, "cuStreamSynchronize", d.cuStreamSynchronize, why) &&
      resolve(library, "cuEventCreate", d.cuEventCreate, why) && resolve(library, "cuEventRecord", d.cuEventRecord, why) &&
      resolve(library, "cuEventSynchronize", d.cuEventSynchronize, why) &&
      resolve(library, "cuEventDestroy_v2", d.cuEventDestroy_v2, why);
  if (!all) return l;
  if (const CUresult r = d.cuInit(0); r != CUDA_SUCCESS) {
    l.why = str("cuInit failed: ", result_name(d, r));
    return l;
  }
  l.ok = true;
  return l;
}

}  // namespace

const Driver* driver(std::string* why) {
  static const Loaded loaded = load();
  if (!loaded.ok && why) *why = loaded.why;
  return loaded.ok ? &loaded.driver : nullptr;
}

std::string result_name(const Driver& d, CUresult result) {
  const char* name = nullptr;
  if (d.cuGetErrorName && d.cuGetErrorName(result, &name) == CUDA_SUCCESS && name) return name;
  return str("CUresult ", result);
}

void check(const Driver& d, CUresult result, std::string_view device, std::string_view call, std::string_view what) {
  if (result == CUDA_SUCCESS) return;
  const std::string message = str(device, ": ", call, " failed: ", result_name(d, result),
                                  what.empty() ? "" : " (", what, what.empty() ? "" : ")");
  fail(result == CUDA_ERROR_OUT_OF_MEMORY ? ErrorCode::out_of_memory : ErrorCode::device, message);
}

}  // namespace lwload::cuda
