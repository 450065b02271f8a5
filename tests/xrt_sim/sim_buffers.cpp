// The simulated XRT device's buffer objects (see sim.hpp): a table of every buffer, its host bytes
// and its device memory (a range of one memfd), the checks a driver makes, the refusals the tests
// ask for, and the counters the tests read.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <ert.h>
#include <xrt_mem.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "sim.hpp"

#define SIM_EXPORT extern "C" __attribute__((visibility("default")))

namespace xrt_sim {
namespace {

constexpr std::uint64_t kPage = 4096;
constexpr std::uint64_t kAddressBase = 0x4000000000;  // device addresses: memfd offset + base

enum class Kind { userptr, host, device_only };

struct Bo {
  Kind kind;
  std::size_t size;
  std::byte* host;        // userptr: the caller's; host: ours (mmap); device_only: nullptr
  std::uint64_t address;  // device memory: [address, address + size) in the memfd at address - base
  unsigned flags;
  const void* device;  // the XRT core device that made it (the `self` of the entry points)
};

struct Counters {
  long long userptr = 0, userptr_refused = 0, device_only = 0, host = 0, violations = 0;
  unsigned long long synced_bytes = 0, copied_bytes = 0;
};

class Device {
 public:
  static Device& instance() {
    static Device device;  // the one simulated device (a test double; XRT owns the real registry)
    return device;
  }

  std::mutex mutex;
  std::map<unsigned, Bo> bos;
  Counters counters;
  unsigned next_handle = 1;
  std::uint64_t next_offset = 0;  // device memory is never reused: a stale address reads nothing
  std::uint64_t device_only_bytes = 0;
  std::string fail_setting;  // LWLOAD_XRT_SIM_FAIL_ALLOC_AFTER as last read
  long long allocations_since = 0;
  int memfd = -1;

 private:
  Device() {
    memfd = memfd_create("lwload-xrt-sim-device-memory", MFD_CLOEXEC);
    if (memfd < 0) std::abort();
  }
};

[[noreturn]] void refuse(int code, const std::string& what) {
  throw std::system_error(code, std::generic_category(), what);
}

[[noreturn]] void violation(Device& d, const std::string& what) {
  ++d.counters.violations;
  std::fprintf(stderr, "lwload xrt_sim: VIOLATION: %s\n", what.c_str());
  refuse(EINVAL, "xrt_sim: " + what);
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

// The allocation limits the tests set; called with the lock held, before a buffer is made.
void admit(Device& d, std::size_t size, Kind kind) {
  const std::string setting = env("LWLOAD_XRT_SIM_FAIL_ALLOC_AFTER");
  if (setting != d.fail_setting) {
    d.fail_setting = setting;
    d.allocations_since = 0;
  }
  if (!setting.empty() && d.allocations_since >= std::atoll(setting.c_str()))
    refuse(ENOMEM, "xrt_sim: out of memory (LWLOAD_XRT_SIM_FAIL_ALLOC_AFTER=" + setting + ")");
  const std::string limit = env("LWLOAD_XRT_SIM_DEVICE_MEMORY");
  if (kind == Kind::device_only && !limit.empty() &&
      d.device_only_bytes + size > std::strtoull(limit.c_str(), nullptr, 0))
    refuse(ENOMEM, "xrt_sim: out of device memory");
  ++d.allocations_since;
}

// Device memory for a new buffer: a fresh page-aligned range of the memfd, zero-filled.
std::uint64_t place(Device& d, std::size_t size) {
  const std::uint64_t offset = d.next_offset;
  d.next_offset += (size + kPage - 1) / kPage * kPage;
  if (ftruncate(d.memfd, static_cast<off_t>(d.next_offset)) != 0) refuse(ENOMEM, "xrt_sim: device memory");
  return kAddressBase + offset;
}

unsigned add(Device& d, Bo bo) {
  const unsigned handle = d.next_handle++;
  d.bos.emplace(handle, bo);
  return handle;
}

Bo& find(Device& d, unsigned handle, const char* call) {
  const auto it = d.bos.find(handle);
  if (it == d.bos.end()) violation(d, std::string(call) + " of unknown buffer handle " + std::to_string(handle));
  return it->second;
}

void check_range(Device& d, const Bo& bo, std::size_t size, std::size_t offset, const char* call) {
  if (offset > bo.size || size > bo.size - offset)
    violation(d, std::string(call) + " of " + std::to_string(size) + " bytes at offset " + std::to_string(offset) +
                     " outside a " + std::to_string(bo.size) + "-byte buffer");
}

// Whether [p, p + size) lies in a file-backed mapping (/proc/self/maps: a mapping with an inode).
bool file_backed(const void* p) {
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    std::uintptr_t lo = 0, hi = 0;
    unsigned long long inode = 0;
    char perms[8] = {};
    if (std::sscanf(line.c_str(), "%" SCNxPTR "-%" SCNxPTR " %7s %*s %*s %llu", &lo, &hi, perms, &inode) != 4) continue;
    if (address >= lo && address < hi) return inode != 0;
  }
  return false;
}

void device_io(Device& d, bool write, std::byte* host, std::uint64_t address, std::size_t n) {
  const auto offset = static_cast<off_t>(address - kAddressBase);
  const ssize_t done = write ? pwrite(d.memfd, host, n, offset) : pread(d.memfd, host, n, offset);
  if (done != static_cast<ssize_t>(n)) refuse(errno != 0 ? errno : EIO, "xrt_sim: device memory I/O");
}

}  // namespace

unsigned alloc_bo(void* self, std::size_t size, unsigned flags) {
  Device& d = Device::instance();
  const std::lock_guard lock(d.mutex);
  if (size == 0) violation(d, "alloc_bo of 0 bytes");
  const Kind kind = (flags & XCL_BO_FLAGS_DEV_ONLY) ? Kind::device_only : Kind::host;
  admit(d, size, kind);
  std::byte* host = nullptr;
  if (kind == Kind::host) {
    void* m = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) refuse(ENOMEM, "xrt_sim: host memory");
    host = static_cast<std::byte*>(m);
    ++d.counters.host;
  } else {
    d.device_only_bytes += size;
    ++d.counters.device_only;
  }
  return add(d, {kind, size, host, place(d, size), flags, self});
}

unsigned alloc_userptr_bo(void* self, void* userptr, std::size_t size, unsigned flags) {
  Device& d = Device::instance();
  const std::lock_guard lock(d.mutex);
  if (reinterpret_cast<std::uintptr_t>(userptr) % kPage != 0)
    violation(d, "user pointer " + std::to_string(reinterpret_cast<std::uintptr_t>(userptr)) + " is not page-aligned");
  if (size == 0) violation(d, "user pointer buffer of 0 bytes");
  const std::string refusing = env("LWLOAD_XRT_SIM_REFUSE_USERPTR");
  if (refusing == "all" || (refusing == "file" && file_backed(userptr))) {
    ++d.counters.userptr_refused;
    refuse(EOPNOTSUPP, refusing == "all" ? "amdxdna (simulated): user pointer buffers are not supported"
                                         : "amdxdna (simulated): cannot pin file-backed pages for the device");
  }
  admit(d, size, Kind::userptr);
  ++d.counters.userptr;
  return add(d, {Kind::userptr, size, static_cast<std::byte*>(userptr), place(d, size), flags, self});
}

void free_bo(void*, unsigned handle) {
  Device& d = Device::instance();
  const std::lock_guard lock(d.mutex);
  const Bo bo = find(d, handle, "free_bo");
  if (bo.kind == Kind::host) munmap(bo.host, bo.size);
  if (bo.kind == Kind::device_only) d.device_only_bytes -= bo.size;
  // The device memory goes back to the system (a hole in the memfd); its addresses are not reused.
  fallocate(d.memfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(bo.address - kAddressBase),
            static_cast<off_t>((bo.size + kPage - 1) / kPage * kPage));
  d.bos.erase(handle);
}

void* map_bo(void*, unsigned handle, bool) {
  Device& d = Device::instance();
  const std::lock_guard lock(d.mutex);
  const Bo& bo = find(d, handle, "map_bo");
  if (bo.kind == Kind::device_only) refuse(EINVAL, "xrt_sim: a device-only buffer has no host mapping");
  return bo.host;
}

void unmap_bo(void*, unsigned handle, void*) {
  Device& d = Device::instance();
  const std::lock_guard lock(d.mutex);
  (void)find(d, handle, "unmap_bo");
}

void sync_bo(void*, unsigned handle, xclBOSyncDirection dir, std::size_t size, std::size_t offset) {
  Device& d = Device::instance();
  const std::lock_guard lock(d.mutex);
  const Bo& bo = find(d, handle, "sync_bo");
  check_range(d, bo, size, offset, "sync_bo");
  if (bo.kind == Kind::device_only) return;  // nothing on the host side to sync
  device_io(d, dir == XCL_BO_SYNC_BO_TO_DEVICE, bo.host + offset, bo.address + offset, size);
  d.counters.synced_bytes += size;
}

namespace {

// A device-side copy between two buffers' device memory; the lock is held.
void copy_locked(Device& d, unsigned dst, unsigned src, std::size_t size, std::size_t dst_offset,
                 std::size_t src_offset) {
  const Bo& to = find(d, dst, "copy_bo (destination)");
  const Bo& from = find(d, src, "copy_bo (source)");
  check_range(d, to, size, dst_offset, "copy_bo into the destination");
  check_range(d, from, size, src_offset, "copy_bo from the source");
  std::vector<std::byte> bounce(std::min<std::size_t>(size, 1 << 20));
  for (std::size_t done = 0; done < size;) {
    const std::size_t n = std::min(bounce.size(), size - done);
    device_io(d, false, bounce.data(), from.address + src_offset + done, n);
    device_io(d, true, bounce.data(), to.address + dst_offset + done, n);
    done += n;
  }
  d.counters.copied_bytes += size;
}

}  // namespace

void copy_bo(void*, unsigned dst, unsigned src, std::size_t size, std::size_t dst_offset, std::size_t src_offset) {
  Device& d = Device::instance();
  const std::lock_guard lock(d.mutex);
  copy_locked(d, dst, src, size, dst_offset, src_offset);
}

int exec_buf(void*, unsigned handle) {
  Device& d = Device::instance();
  const std::lock_guard lock(d.mutex);
  const Bo& command = find(d, handle, "exec_buf");
  if (command.host == nullptr || command.size < sizeof(ert_start_copybo_cmd))
    violation(d, "exec_buf of a buffer that holds no command");
  auto* packet = reinterpret_cast<ert_start_copybo_cmd*>(command.host);
  if (packet->opcode != ERT_START_COPYBO) {
    packet->state = ERT_CMD_STATE_ERROR;
    refuse(EOPNOTSUPP, "xrt_sim: only copy commands (ERT_START_COPYBO) are simulated");
  }
  try {
    copy_locked(d, packet->dst_bo_hdl, packet->src_bo_hdl, ert_copybo_size(packet), ert_copybo_dst_offset(packet),
                ert_copybo_src_offset(packet));
    packet->state = ERT_CMD_STATE_COMPLETED;
  } catch (...) {
    packet->state = ERT_CMD_STATE_ERROR;
    throw;
  }
  return 0;
}

int exec_wait(const void*, int) { return 1; }  // every command completed when it was sent

void get_bo_properties(const void*, unsigned handle, xclBOProperties* properties) {
  Device& d = Device::instance();
  const std::lock_guard lock(d.mutex);
  const Bo& bo = find(d, handle, "get_bo_properties");
  *properties = {};
  properties->handle = handle;
  properties->flags = bo.flags;
  properties->size = bo.size;
  properties->paddr = bo.address;
}

int export_bo(const void*, unsigned) { refuse(EOPNOTSUPP, "xrt_sim: buffer export is not simulated"); }
unsigned import_bo(void*, int) { refuse(EOPNOTSUPP, "xrt_sim: buffer import is not simulated"); }

}  // namespace xrt_sim

using xrt_sim::Device;

SIM_EXPORT long long lwload_xrt_sim_counter(const char* name) {
  Device& d = Device::instance();
  const std::lock_guard lock(d.mutex);
  const std::string n = name != nullptr ? name : "";
  if (n == "live") return static_cast<long long>(d.bos.size());
  if (n == "violations") return d.counters.violations;
  if (n == "userptr") return d.counters.userptr;
  if (n == "userptr_refused") return d.counters.userptr_refused;
  if (n == "device_only") return d.counters.device_only;
  if (n == "host") return d.counters.host;
  if (n == "synced_bytes") return static_cast<long long>(d.counters.synced_bytes);
  if (n == "copied_bytes") return static_cast<long long>(d.counters.copied_bytes);
  return -1;
}

// 0 when [address, address + n) lies inside one live buffer's device memory, -1 otherwise.
SIM_EXPORT int lwload_xrt_sim_read_device(unsigned long long address, void* dst, unsigned long long n) {
  Device& d = Device::instance();
  const std::lock_guard lock(d.mutex);
  for (const auto& [handle, bo] : d.bos) {
    if (address < bo.address || address - bo.address > bo.size || n > bo.size - (address - bo.address)) continue;
    try {
      xrt_sim::device_io(d, false, static_cast<std::byte*>(dst), address, static_cast<std::size_t>(n));
      return 0;
    } catch (const std::exception&) {
      return -1;
    }
  }
  return -1;
}

// The XRT core device (xrt::device::get_handle().get()) whose buffer holds `address`; nullptr
// when no live buffer does.
SIM_EXPORT const void* lwload_xrt_sim_owner(unsigned long long address) {
  Device& d = Device::instance();
  const std::lock_guard lock(d.mutex);
  for (const auto& [handle, bo] : d.bos)
    if (address >= bo.address && address - bo.address < bo.size) return bo.device;
  return nullptr;
}

SIM_EXPORT void lwload_xrt_sim_describe(char* text, unsigned long size) {
  Device& d = Device::instance();
  const std::lock_guard lock(d.mutex);
  std::snprintf(text, size,
                "%zu live buffer objects; %lld user-pointer (%lld refused), %lld host, %lld device-only; %llu bytes "
                "synced, %llu copied; %lld violations",
                d.bos.size(), d.counters.userptr, d.counters.userptr_refused, d.counters.host, d.counters.device_only,
                d.counters.synced_bytes, d.counters.copied_bytes, d.counters.violations);
}
