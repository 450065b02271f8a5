// The CUDA driver API as lwload uses it, loaded at run time. Debian's main archive has no CUDA SDK
// (only non-free does) and CI has no GPU, so nothing NVIDIA is needed to build: libcuda.so.1 is
// opened with dlopen and the few entry points lwload calls are declared here by hand, with their
// ABI names (the `_v2` suffixes are the symbols the driver exports for the 64-bit API) and the
// values of the enums and flags they take, from the driver API's documentation. These ABI names
// and values have been stable since CUDA 4/6.
#pragma once

#include "backends/cuda/layer.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

namespace lwload::cuda {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = std::uint64_t;
using CUcontext = struct CUctx_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;

inline constexpr CUresult CUDA_SUCCESS = 0;
inline constexpr CUresult CUDA_ERROR_OUT_OF_MEMORY = 2;
inline constexpr CUresult CUDA_ERROR_NOT_READY = 600;

// CUdevice_attribute values.
inline constexpr int CU_DEVICE_ATTRIBUTE_INTEGRATED = 18;
inline constexpr int CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY = 19;
inline constexpr int CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED = 113;

// cuMemHostRegister flags.
inline constexpr unsigned CU_MEMHOSTREGISTER_DEVICEMAP = 0x02;
inline constexpr unsigned CU_MEMHOSTREGISTER_READ_ONLY = 0x08;
// cuStreamCreate / cuEventCreate flags.
inline constexpr unsigned CU_STREAM_NON_BLOCKING = 0x1;
inline constexpr unsigned CU_EVENT_DISABLE_TIMING = 0x2;

// The entry points, resolved once per process.
struct Driver {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDriverGetVersion)(int*);
  CUresult (*cuGetErrorName)(CUresult, const char**);
  CUresult (*cuDeviceGetCount)(int*);
  CUresult (*cuDeviceGet)(CUdevice*, int);
  CUresult (*cuDeviceGetName)(char*, int, CUdevice);
  CUresult (*cuDeviceTotalMem_v2)(std::size_t*, CUdevice);
  CUresult (*cuMemGetInfo_v2)(std::size_t*, std::size_t*);  // free and total, in the current context
  CUresult (*cuDeviceGetAttribute)(int*, int, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*cuDevicePrimaryCtxRelease_v2)(CUdevice);
  CUresult (*cuCtxPushCurrent_v2)(CUcontext);
  CUresult (*cuCtxPopCurrent_v2)(CUcontext*);
  CUresult (*cuMemAlloc_v2)(CUdeviceptr*, std::size_t);
  CUresult (*cuMemFree_v2)(CUdeviceptr);
  CUresult (*cuMemAllocHost_v2)(void**, std::size_t);
  CUresult (*cuMemFreeHost)(void*);
  CUresult (*cuMemHostRegister_v2)(void*, std::size_t, unsigned);
  CUresult (*cuMemHostUnregister)(void*);
  CUresult (*cuMemHostGetDevicePointer_v2)(CUdeviceptr*, void*, unsigned);
  CUresult (*cuMemcpyHtoDAsync_v2)(CUdeviceptr, const void*, std::size_t, CUstream);
  CUresult (*cuMemcpyDtoH_v2)(void*, CUdeviceptr, std::size_t);
  CUresult (*cuStreamCreate)(CUstream*, unsigned);
  CUresult (*cuStreamDestroy_v2)(CUstream);
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuEventCreate)(CUevent*, unsigned);
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuEventSynchronize)(CUevent);
  CUresult (*cuEventDestroy_v2)(CUevent);
};

// The driver, or nullptr with *why saying what is missing ("libcuda.so.1: cannot open shared
// object file", "cuInit failed: CUDA_ERROR_NO_DEVICE", ...). LWLOAD_CUDA_LIBRARY names another
// library to load (the tests' simulated driver).
const Driver* driver(std::string* why);

// "CUDA_ERROR_OUT_OF_MEMORY" (or the number when the driver has no name for it).
std::string result_name(const Driver& d, CUresult result);

// Throws Error(out_of_memory) for CUDA_ERROR_OUT_OF_MEMORY, Error(device) otherwise, naming the
// device, the call and what it was for.
void check(const Driver& d, CUresult result, std::string_view device, std::string_view call,
           std::string_view what = {});

}  // namespace lwload::cuda
