#include "backends/cuda/driver.hpp"

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
  // Every entry point by its ABI name (the member's own name), stopping at the first one missing.
#define LWLOAD_CUDA_ENTRY(name) resolve(library, #name, d.name, l.why)
  const bool all =
      LWLOAD_CUDA_ENTRY(cuInit) && LWLOAD_CUDA_ENTRY(cuDriverGetVersion) && LWLOAD_CUDA_ENTRY(cuGetErrorName) &&
      LWLOAD_CUDA_ENTRY(cuDeviceGetCount) && LWLOAD_CUDA_ENTRY(cuDeviceGet) && LWLOAD_CUDA_ENTRY(cuDeviceGetName) &&
      LWLOAD_CUDA_ENTRY(cuDeviceTotalMem_v2) && LWLOAD_CUDA_ENTRY(cuMemGetInfo_v2) &&
      LWLOAD_CUDA_ENTRY(cuDeviceGetAttribute) && LWLOAD_CUDA_ENTRY(cuDevicePrimaryCtxRetain) &&
      LWLOAD_CUDA_ENTRY(cuDevicePrimaryCtxRelease_v2) && LWLOAD_CUDA_ENTRY(cuCtxPushCurrent_v2) &&
      LWLOAD_CUDA_ENTRY(cuCtxPopCurrent_v2) && LWLOAD_CUDA_ENTRY(cuMemAlloc_v2) && LWLOAD_CUDA_ENTRY(cuMemFree_v2) &&
      LWLOAD_CUDA_ENTRY(cuMemAllocHost_v2) && LWLOAD_CUDA_ENTRY(cuMemFreeHost) &&
      LWLOAD_CUDA_ENTRY(cuMemHostRegister_v2) && LWLOAD_CUDA_ENTRY(cuMemHostUnregister) &&
      LWLOAD_CUDA_ENTRY(cuMemHostGetDevicePointer_v2) && LWLOAD_CUDA_ENTRY(cuMemcpyHtoDAsync_v2) &&
      LWLOAD_CUDA_ENTRY(cuMemcpyDtoH_v2) && LWLOAD_CUDA_ENTRY(cuStreamCreate) &&
      LWLOAD_CUDA_ENTRY(cuStreamDestroy_v2) && LWLOAD_CUDA_ENTRY(cuStreamSynchronize) &&
      LWLOAD_CUDA_ENTRY(cuEventCreate) && LWLOAD_CUDA_ENTRY(cuEventRecord) && LWLOAD_CUDA_ENTRY(cuEventSynchronize) &&
      LWLOAD_CUDA_ENTRY(cuEventDestroy_v2);
#undef LWLOAD_CUDA_ENTRY
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
  const std::string message = str(device, ": ", call, " failed: ", result_name(d, result), what.empty() ? "" : " (",
                                  what, what.empty() ? "" : ")");
  fail(result == CUDA_ERROR_OUT_OF_MEMORY ? ErrorCode::out_of_memory : ErrorCode::device, message);
}

}  // namespace lwload::cuda
