// TEST DOUBLE (see sim.hpp): the simulated driver's memory. Host allocations are anonymous
// mappings; imports alias the caller's pages; device memory of every configuration lives in one
// sparse memfd, addressed through opaque non-canonical "device pointers" (never dereferenceable),
// so device bytes are moved with pread/pwrite and never appear in the process's RSS.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "backends/level_zero/extensions.hpp"
#include "sim.hpp"

namespace ze_sim {
namespace {

constexpr std::uint64_t kDeviceBase = 0xd000'0000'0000'0000ull;  // non-canonical: not a host address
constexpr std::uint64_t kDeviceAlignment = 64 * 1024;

std::uint64_t page() { return static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE)); }
std::uint64_t round_up(std::uint64_t v, std::uint64_t a) { return (v + a - 1) / a * a; }

struct HostRange {
  std::size_t size;
  std::size_t mapped;  // 0 for memmap imports (the caller owns the pages)
};

struct Memory {
  std::mutex mutex;
  std::map<std::uintptr_t, HostRange> host;           // zeMemAllocHost results (incl. memmap imports)
  std::map<std::uintptr_t, std::size_t> zex_imports;  // zexDriverImportExternalPointer ranges
  std::map<std::uint64_t, std::uint64_t> device;      // memfd offset -> size
  int memfd = -1;

  int fd() {  // called with mutex held
    if (memfd < 0) {
      memfd = memfd_create("lwload-ze-sim-device-memory", MFD_CLOEXEC);
      if (memfd >= 0 && ftruncate(memfd, static_cast<off_t>(config().device_memory)) != 0) {
        close(memfd);
        memfd = -1;
      }
    }
    return memfd;
  }
};

Memory& memory() {
  static Memory m;
  return m;
}

bool allocation_allowed() {
  const std::int64_t n = ++counters().allocation_calls;
  return config().fail_alloc_after < 0 || n <= config().fail_alloc_after;
}

bool is_device_address(const void* p) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  return a >= kDeviceBase && a - kDeviceBase < config().device_memory;
}

// The memfd offset of [p, p+size) when it lies inside one device allocation.
bool device_range(const void* p, std::size_t size, std::uint64_t* offset) {
  const std::uint64_t off = reinterpret_cast<std::uintptr_t>(p) - kDeviceBase;
  Memory& m = memory();
  std::lock_guard lock(m.mutex);
  auto it = m.device.upper_bound(off);
  if (it == m.device.begin()) return false;
  --it;
  if (off - it->first > it->second || size > it->second - (off - it->first)) return false;
  *offset = off;
  return true;
}

// Whether every page of [p, p+size) is mapped writable, from /proc/self/maps.
bool writable(const void* p, std::size_t size) {
  const auto begin = reinterpret_cast<std::uintptr_t>(p), end = begin + size;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  std::uintptr_t covered = begin;
  while (std::getline(maps, line) && covered < end) {
    std::uintptr_t lo = 0, hi = 0;
    char perms[8] = {};
    if (std::sscanf(line.c_str(), "%lx-%lx %7s", &lo, &hi, perms) != 3) continue;
    if (hi <= covered || lo > covered) continue;
    if (perms[1] != 'w') return false;
    covered = hi;
  }
  return covered >= end;
}

ze_result_t memmap_import(const ze_host_mem_alloc_desc_t* desc,
                          const lwload::level_zero::ExternalMemmapSysmemExtDesc& ext, std::size_t size, void** out) {
  const auto base = reinterpret_cast<std::uintptr_t>(ext.pSystemMemory);
  if (config().refuse_import) return config().refusal;
  if (base % page() != 0 || ext.size % page() != 0 || ext.size == 0 || size != ext.size)
    return ZE_RESULT_ERROR_INVALID_ARGUMENT;  // the extension maps whole pages only
  if (!(desc->flags & lwload::level_zero::kHostMemAllocFlagMemReadOnly) && !writable(ext.pSystemMemory, ext.size))
    return ZE_RESULT_ERROR_INVALID_ARGUMENT;  // read-only pages need the read-only flag
  Memory& m = memory();
  std::lock_guard lock(m.mutex);
  m.host[base] = HostRange{ext.size, 0};
  ++counters().imports;
  *out = const_cast<void*>(ext.pSystemMemory);
  return ZE_RESULT_SUCCESS;
}

}  // namespace

ze_result_t alloc_host(const ze_host_mem_alloc_desc_t* desc, std::size_t size, std::size_t alignment, void** out) {
  if (out == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (size == 0) return ZE_RESULT_ERROR_UNSUPPORTED_SIZE;
  if (alignment & (alignment - 1)) return ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT;
  if (!allocation_allowed()) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  for (auto* ext = desc != nullptr ? static_cast<const ze_base_desc_t*>(desc->pNext) : nullptr; ext != nullptr;
       ext = static_cast<const ze_base_desc_t*>(ext->pNext)) {
    if (static_cast<std::uint32_t>(ext->stype) == lwload::level_zero::kStructureTypeExternalMemmapSysmemExtDesc) {
      if (config().import != ImportKind::memmap) return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
      return memmap_import(desc, *reinterpret_cast<const lwload::level_zero::ExternalMemmapSysmemExtDesc*>(ext), size,
                           out);
    }
  }
  if (size > config().max_alloc) return ZE_RESULT_ERROR_UNSUPPORTED_SIZE;
  if (alignment > page()) return ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT;
  const std::size_t mapped = round_up(size, page());
  void* p = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  Memory& m = memory();
  std::lock_guard lock(m.mutex);
  m.host[reinterpret_cast<std::uintptr_t>(p)] = HostRange{size, mapped};
  ++counters().host_allocations;
  *out = p;
  return ZE_RESULT_SUCCESS;
}

ze_result_t alloc_device(std::size_t size, std::size_t alignment, void** out) {
  if (out == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (size == 0) return ZE_RESULT_ERROR_UNSUPPORTED_SIZE;
  if (alignment & (alignment - 1)) return ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT;
  if (size > config().max_alloc) return ZE_RESULT_ERROR_UNSUPPORTED_SIZE;
  if (!allocation_allowed()) return ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY;
  Memory& m = memory();
  std::lock_guard lock(m.mutex);
  if (m.fd() < 0) return ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY;
  const std::uint64_t need = round_up(size, kDeviceAlignment);
  std::uint64_t cursor = 0;  // first fit over the gaps between allocations
  for (const auto& [offset, length] : m.device) {
    if (offset - cursor >= need) break;
    cursor = round_up(offset + length, kDeviceAlignment);
  }
  if (cursor + need > config().device_memory) return ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY;
  m.device[cursor] = size;
  ++counters().device_allocations;
  const std::uint64_t used = counters().device_bytes_in_use += need;
  std::uint64_t peak = counters().device_bytes_peak;
  while (used > peak && !counters().device_bytes_peak.compare_exchange_weak(peak, used)) {
  }
  *out = reinterpret_cast<void*>(kDeviceBase + cursor);
  return ZE_RESULT_SUCCESS;
}

ze_result_t free_memory(void* ptr) {
  if (ptr == nullptr) return ZE_RESULT_SUCCESS;
  Memory& m = memory();
  std::lock_guard lock(m.mutex);
  const auto a = reinterpret_cast<std::uintptr_t>(ptr);
  if (auto it = m.host.find(a); it != m.host.end()) {
    if (it->second.mapped != 0) {
      munmap(ptr, it->second.mapped);
      --counters().host_allocations;
    } else {
      --counters().imports;  // memmap import: the pages stay the caller's
    }
    m.host.erase(it);
    return ZE_RESULT_SUCCESS;
  }
  if (is_device_address(ptr)) {
    if (auto it = m.device.find(a - kDeviceBase); it != m.device.end()) {
      const std::uint64_t length = round_up(it->second, kDeviceAlignment);
      fallocate(m.memfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(it->first),
                static_cast<off_t>(length));
      counters().device_bytes_in_use -= length;
      --counters().device_allocations;
      m.device.erase(it);
      return ZE_RESULT_SUCCESS;
    }
  }
  return ZE_RESULT_ERROR_INVALID_ARGUMENT;
}

ze_result_t import_pointer(void* ptr, std::size_t size) {
  if (ptr == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  const auto a = reinterpret_cast<std::uintptr_t>(ptr);
  if (config().refuse_import) return config().refusal;
  if (a % page() != 0 || size == 0) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (!allocation_allowed()) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  Memory& m = memory();
  std::lock_guard lock(m.mutex);
  if (!m.zex_imports.emplace(a, size).second) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  ++counters().imports;
  return ZE_RESULT_SUCCESS;
}

ze_result_t release_import(void* ptr) {
  Memory& m = memory();
  std::lock_guard lock(m.mutex);
  if (m.zex_imports.erase(reinterpret_cast<std::uintptr_t>(ptr)) == 0) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  --counters().imports;
  return ZE_RESULT_SUCCESS;
}

ze_memory_type_t memory_type(const void* ptr) {
  std::uint64_t offset = 0;
  if (is_device_address(ptr)) return device_range(ptr, 1, &offset) ? ZE_MEMORY_TYPE_DEVICE : ZE_MEMORY_TYPE_UNKNOWN;
  Memory& m = memory();
  std::lock_guard lock(m.mutex);
  const auto a = reinterpret_cast<std::uintptr_t>(ptr);
  auto it = m.host.upper_bound(a);
  if (it != m.host.begin() && a - std::prev(it)->first < std::prev(it)->second.size) return ZE_MEMORY_TYPE_HOST;
  return ZE_MEMORY_TYPE_UNKNOWN;
}

ze_result_t copy_bytes(void* dst, const void* src, std::size_t size) {
  std::uint64_t dst_off = 0, src_off = 0;
  const bool dst_dev = is_device_address(dst), src_dev = is_device_address(src);
  if (dst_dev && !device_range(dst, size, &dst_off)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (src_dev && !device_range(src, size, &src_off)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  const int fd = memory().memfd;
  if (!dst_dev && !src_dev) {
    std::memmove(dst, src, size);
    return ZE_RESULT_SUCCESS;
  }
  std::vector<std::byte> bounce(dst_dev && src_dev ? std::min<std::size_t>(size, 1 << 20) : 0);
  std::size_t done = 0;
  while (done < size) {
    ssize_t n = 0;
    if (dst_dev && src_dev) {
      const std::size_t chunk = std::min(bounce.size(), size - done);
      n = pread(fd, bounce.data(), chunk, static_cast<off_t>(src_off + done));
      if (n > 0) n = pwrite(fd, bounce.data(), static_cast<std::size_t>(n), static_cast<off_t>(dst_off + done));
    } else if (dst_dev) {
      n = pwrite(fd, static_cast<const std::byte*>(src) + done, size - done, static_cast<off_t>(dst_off + done));
    } else {
      n = pread(fd, static_cast<std::byte*>(dst) + done, size - done, static_cast<off_t>(src_off + done));
    }
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return ZE_RESULT_ERROR_DEVICE_LOST;
    done += static_cast<std::size_t>(n);
  }
  return ZE_RESULT_SUCCESS;
}

}  // namespace ze_sim
