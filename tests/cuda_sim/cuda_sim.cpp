// TEST DOUBLE: a simulated libcuda.so.1 for lwload's tests, never installed. It implements the
// driver entry points lwload's cuda backend calls (backends/cuda/driver.hpp) well enough to
// load and verify every placement without NVIDIA hardware:
//   LWLOAD_CUDA_SIM=igpu-ro  integrated, read-only host registration supported (zero_copy)
//   LWLOAD_CUDA_SIM=igpu     integrated without it (read-only file pages refused → direct)
//   LWLOAD_CUDA_SIM=dgpu     discrete; its "device memory" is a memfd outside this process's
//                            address space (pwrite/pread), so host-memory figures stay honest
//   unset                    cuInit fails with CUDA_ERROR_NO_DEVICE
// Fault knobs: LWLOAD_CUDA_SIM_FAIL_ALLOC_AFTER=N (allocation N+1 on fails: out of memory),
// LWLOAD_CUDA_SIM_FAIL_COPY_AT=N (the Nth host-to-device copy fails), LWLOAD_CUDA_SIM_REFUSE_REGISTER=1,
// LWLOAD_CUDA_SIM_REGISTER_OUT_OF_MEMORY=1 (cuMemHostRegister cannot pin: CUDA_ERROR_OUT_OF_MEMORY),
// LWLOAD_CUDA_SIM_USED_BY_OTHERS=BYTES (device memory other processes hold: cuMemGetInfo reports less free).
// Copies complete before the call returns (the asynchronous API allows it). lwload_cuda_sim_live()
// counts what is still allocated, registered or created, so tests can assert nothing leaked.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

namespace {

using CUresult = int;
using CUdeviceptr = std::uint64_t;

constexpr CUresult kSuccess = 0, kInvalidValue = 1, kOutOfMemory = 2, kNoDevice = 100, kInvalidDevice = 101,
                   kNotSupported = 801, kUnknown = 999;
constexpr std::uint64_t kDeviceBase = 0x7e0000000000ull;  // device addresses: outside any host mapping

struct Config {
  std::string mode;
  long fail_alloc_after = -1;
  long fail_copy_at = -1;
  bool refuse_register = false;
  bool register_out_of_memory = false;
  std::uint64_t device_memory = 8ull << 30;
  std::uint64_t used_by_others = 0;  // device memory other processes hold (cuMemGetInfo's free is less)
};

long env_long(const char* name, long fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtol(v, nullptr, 10) : fallback;
}

const Config& config() {
  static const Config c = [] {
    Config c;
    const char* mode = std::getenv("LWLOAD_CUDA_SIM");
    c.mode = mode ? mode : "";
    c.fail_alloc_after = env_long("LWLOAD_CUDA_SIM_FAIL_ALLOC_AFTER", -1);
    c.fail_copy_at = env_long("LWLOAD_CUDA_SIM_FAIL_COPY_AT", -1);
    c.refuse_register = env_long("LWLOAD_CUDA_SIM_REFUSE_REGISTER", 0) != 0;
    c.register_out_of_memory = env_long("LWLOAD_CUDA_SIM_REGISTER_OUT_OF_MEMORY", 0) != 0;
    c.used_by_others = static_cast<std::uint64_t>(env_long("LWLOAD_CUDA_SIM_USED_BY_OTHERS", 0));
    return c;
  }();
  return c;
}

struct State {
  std::mutex mutex;
  int memfd = -1;
  std::uint64_t device_top = 0;                        // bump allocator in the memfd
  std::map<CUdeviceptr, std::uint64_t> device_allocs;  // device address → size
  std::map<std::uintptr_t, std::uint64_t> host_allocs, registered;
  long allocations = 0, copies = 0;
  std::atomic<long> live{0};
};

State& state() {
  static State s;
  return s;
}

bool fail_allocation(State& s) {
  ++s.allocations;
  return config().fail_alloc_after >= 0 && s.allocations > config().fail_alloc_after;
}

// The host range [p, p+n) inside a pinned or registered block, if it is one.
bool host_known(State& s, std::uintptr_t p, std::uint64_t n) {
  for (auto* blocks : {&s.host_allocs, &s.registered}) {
    auto it = blocks->upper_bound(p);
    if (it == blocks->begin()) continue;
    --it;
    if (p >= it->first && p + n <= it->first + it->second) return true;
  }
  return false;
}

// The memfd offset of device range [p, p+n), or -1.
long long device_offset(State& s, CUdeviceptr p, std::uint64_t n) {
  auto it = s.device_allocs.upper_bound(p);
  if (it == s.device_allocs.begin()) return -1;
  --it;
  if (p < it->first || p + n > it->first + it->second) return -1;
  return static_cast<long long>(p - kDeviceBase);
}

int& current_depth() {
  thread_local int depth = 0;
  return depth;
}

}  // namespace

#define SIM_API extern "C" __attribute__((visibility("default")))

SIM_API long lwload_cuda_sim_live() { return state().live.load(); }

SIM_API CUresult cuInit(unsigned) { return config().mode.empty() ? kNoDevice : kSuccess; }
SIM_API CUresult cuDriverGetVersion(int* v) {
  *v = 12040;
  return kSuccess;
}
SIM_API CUresult cuGetErrorName(CUresult r, const char** name) {
  switch (r) {
    case kSuccess: *name = "CUDA_SUCCESS"; break;
    case kInvalidValue: *name = "CUDA_ERROR_INVALID_VALUE"; break;
    case kOutOfMemory: *name = "CUDA_ERROR_OUT_OF_MEMORY"; break;
    case kNoDevice: *name = "CUDA_ERROR_NO_DEVICE"; break;
    case kInvalidDevice: *name = "CUDA_ERROR_INVALID_DEVICE"; break;
    case kNotSupported: *name = "CUDA_ERROR_NOT_SUPPORTED"; break;
    default: *name = "CUDA_ERROR_UNKNOWN"; break;
  }
  return kSuccess;
}
SIM_API CUresult cuDeviceGetCount(int* n) {
  *n = 1;
  return kSuccess;
}
SIM_API CUresult cuDeviceGet(int* d, int i) {
  if (i != 0) return kInvalidDevice;
  *d = 0;
  return kSuccess;
}
SIM_API CUresult cuDeviceGetName(char* name, int len, int) {
  std::snprintf(name, static_cast<std::size_t>(len), "lwload simulated CUDA device (%s)", config().mode.c_str());
  return kSuccess;
}
SIM_API CUresult cuDeviceTotalMem_v2(std::size_t* bytes, int) {
  *bytes = config().device_memory;
  return kSuccess;
}
// Free memory: what the simulated device has less what others hold and lwload allocated so far.
SIM_API CUresult cuMemGetInfo_v2(std::size_t* free, std::size_t* total) {
  State& s = state();
  const std::lock_guard lock(s.mutex);
  std::uint64_t used = config().used_by_others;
  for (const auto& [address, size] : s.device_allocs) used += size;
  *total = config().device_memory;
  *free = used >= config().device_memory ? 0 : config().device_memory - used;
  return kSuccess;
}
SIM_API CUresult cuDeviceGetAttribute(int* value, int attribute, int) {
  const std::string& mode = config().mode;
  switch (attribute) {
    case 18: *value = mode != "dgpu"; break;      // INTEGRATED
    case 19: *value = 1; break;                   // CAN_MAP_HOST_MEMORY
    case 113: *value = mode == "igpu-ro"; break;  // READ_ONLY_HOST_REGISTER_SUPPORTED
    default: *value = 0; break;
  }
  return kSuccess;
}
SIM_API CUresult cuDevicePrimaryCtxRetain(void** ctx, int) {
  static int primary;
  *ctx = &primary;
  ++state().live;
  return kSuccess;
}
SIM_API CUresult cuDevicePrimaryCtxRelease_v2(int) {
  --state().live;
  return kSuccess;
}
SIM_API CUresult cuCtxPushCurrent_v2(void*) {
  ++current_depth();
  return kSuccess;
}
SIM_API CUresult cuCtxPopCurrent_v2(void** ctx) {
  if (current_depth() == 0) return kInvalidValue;
  --current_depth();
  if (ctx) *ctx = nullptr;
  return kSuccess;
}

SIM_API CUresult cuMemAlloc_v2(CUdeviceptr* out, std::size_t bytes) {
  State& s = state();
  const std::lock_guard lock(s.mutex);
  if (fail_allocation(s) || s.device_top + bytes > config().device_memory) return kOutOfMemory;
  if (s.memfd < 0) s.memfd = ::memfd_create("lwload-cuda-sim-device-memory", MFD_CLOEXEC);
  if (s.memfd < 0) return kUnknown;
  const std::uint64_t offset = (s.device_top + 255) / 256 * 256;
  if (::ftruncate(s.memfd, static_cast<off_t>(offset + bytes)) != 0) return kOutOfMemory;
  s.device_top = offset + bytes;
  *out = kDeviceBase + offset;
  s.device_allocs[*out] = bytes;
  ++s.live;
  return kSuccess;
}
SIM_API CUresult cuMemFree_v2(CUdeviceptr p) {
  State& s = state();
  const std::lock_guard lock(s.mutex);
  const auto it = s.device_allocs.find(p);
  if (it == s.device_allocs.end()) return kInvalidValue;
  // The memory goes back: its pages punched out of the memfd, and the bump allocator starts over
  // once nothing is allocated (a benchmark loads a model many times in one process).
  ::fallocate(s.memfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(p - kDeviceBase),
              static_cast<off_t>(it->second));
  s.device_allocs.erase(it);
  if (s.device_allocs.empty()) {
    s.device_top = 0;
    (void)::ftruncate(s.memfd, 0);
  }
  --s.live;
  return kSuccess;
}
SIM_API CUresult cuMemAllocHost_v2(void** out, std::size_t bytes) {
  State& s = state();
  const std::lock_guard lock(s.mutex);
  if (fail_allocation(s)) return kOutOfMemory;
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return kOutOfMemory;
  s.host_allocs[reinterpret_cast<std::uintptr_t>(p)] = bytes;
  *out = p;
  ++s.live;
  return kSuccess;
}
SIM_API CUresult cuMemFreeHost(void* p) {
  State& s = state();
  const std::lock_guard lock(s.mutex);
  const auto it = s.host_allocs.find(reinterpret_cast<std::uintptr_t>(p));
  if (it == s.host_allocs.end()) return kInvalidValue;
  ::munmap(p, it->second);
  s.host_allocs.erase(it);
  --s.live;
  return kSuccess;
}
SIM_API CUresult cuMemHostRegister_v2(void* p, std::size_t bytes, unsigned flags) {
  State& s = state();
  const std::lock_guard lock(s.mutex);
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  if (config().refuse_register || bytes == 0 || address % static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE)) != 0)
    return kInvalidValue;
  if ((flags & 0x08) && config().mode != "igpu-ro") return kNotSupported;  // READ_ONLY unsupported
  if (config().register_out_of_memory) return kOutOfMemory;                // no memory left to pin the pages
  if (!(flags & 0x08)) return kInvalidValue;  // lwload registers read-only file pages: it must say so
  s.registered[address] = bytes;
  ++s.live;
  return kSuccess;
}
SIM_API CUresult cuMemHostUnregister(void* p) {
  State& s = state();
  const std::lock_guard lock(s.mutex);
  if (s.registered.erase(reinterpret_cast<std::uintptr_t>(p)) == 0) return kInvalidValue;
  --s.live;
  return kSuccess;
}
SIM_API CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr* out, void* p, unsigned) {
  State& s = state();
  const std::lock_guard lock(s.mutex);
  if (!host_known(s, reinterpret_cast<std::uintptr_t>(p), 1)) return kInvalidValue;
  *out = reinterpret_cast<std::uintptr_t>(p);  // unified addressing: the same address
  return kSuccess;
}
SIM_API CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void* src, std::size_t bytes, void*) {
  State& s = state();
  const std::lock_guard lock(s.mutex);
  if (config().fail_copy_at >= 0 && ++s.copies == config().fail_copy_at) return kUnknown;
  const long long offset = device_offset(s, dst, bytes);
  if (offset >= 0) {
    for (std::size_t done = 0; done < bytes;) {
      const ssize_t n =
          ::pwrite(s.memfd, static_cast<const char*>(src) + done, bytes - done, offset + static_cast<long long>(done));
      if (n <= 0) return kUnknown;
      done += static_cast<std::size_t>(n);
    }
    return kSuccess;
  }
  if (!host_known(s, dst, bytes)) return kInvalidValue;
  std::memcpy(reinterpret_cast<void*>(dst), src, bytes);
  return kSuccess;
}
SIM_API CUresult cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, std::size_t bytes) {
  State& s = state();
  const std::lock_guard lock(s.mutex);
  const long long offset = device_offset(s, src, bytes);
  if (offset >= 0) {
    for (std::size_t done = 0; done < bytes;) {
      const ssize_t n =
          ::pread(s.memfd, static_cast<char*>(dst) + done, bytes - done, offset + static_cast<long long>(done));
      if (n <= 0) return kUnknown;
      done += static_cast<std::size_t>(n);
    }
    return kSuccess;
  }
  if (!host_known(s, src, bytes)) return kInvalidValue;
  std::memcpy(dst, reinterpret_cast<const void*>(src), bytes);
  return kSuccess;
}
SIM_API CUresult cuStreamCreate(void** stream, unsigned) {
  *stream = new int(0);
  ++state().live;
  return kSuccess;
}
SIM_API CUresult cuStreamDestroy_v2(void* stream) {
  delete static_cast<int*>(stream);
  --state().live;
  return kSuccess;
}
SIM_API CUresult cuStreamSynchronize(void*) { return kSuccess; }
SIM_API CUresult cuEventCreate(void** event, unsigned) {
  *event = new int(0);
  ++state().live;
  return kSuccess;
}
SIM_API CUresult cuEventRecord(void*, void*) { return kSuccess; }
SIM_API CUresult cuEventSynchronize(void*) { return kSuccess; }
SIM_API CUresult cuEventDestroy_v2(void* event) {
  delete static_cast<int*>(event);
  --state().live;
  return kSuccess;
}
