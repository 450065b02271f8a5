// What the machine has for a load: host memory (MemAvailable), the memory limits of the process's
// cgroups (v1 and v2, ancestors included: the page cache counts against them) and the address space
// RLIMIT_AS leaves. The planner compares what a load will hold with these before anything is read
// (docs/ARCHITECTURE.md "Memory contracts" and "Over-memory loads"). A plain struct, so tests
// and applications can set the figures instead of reading them (PlanOptions::machine).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "lwload/export.h"

namespace lwload {

struct LWLOAD_API MachineMemory {
  std::uint64_t mem_total = 0;      // /proc/meminfo MemTotal; 0 = unknown
  std::uint64_t mem_available = 0;  // /proc/meminfo MemAvailable (free + reclaimable); 0 = unknown

  // The tightest memory limit over the process's cgroup and its ancestors, v1 or v2; limit 0 = none.
  std::uint64_t cgroup_limit = 0;  // memory.max (v2) / memory.limit_in_bytes (v1)
  std::uint64_t cgroup_usage = 0;  // memory.current / memory.usage_in_bytes of that cgroup
  std::uint64_t cgroup_file = 0;   // of the usage, page cache (reclaimable, as in MemAvailable)
  std::string cgroup;              // which: "cgroup v2 /sys/fs/cgroup/a/b memory.max"

  std::uint64_t address_space_limit = 0;  // RLIMIT_AS (soft), at most 3 GiB in a 32-bit process; 0 = unlimited
  std::uint64_t address_space_used = 0;   // the process's mappings now (/proc/self/maps)

  // What the cgroup still allows: limit − (usage − page cache), at least 0; UINT64_MAX when no limit.
  std::uint64_t cgroup_headroom() const noexcept;
  // Host memory a load may still take: the least of MemAvailable and the cgroup's headroom; 0 = unknown.
  std::uint64_t host_available() const noexcept;
  // Which of them is the least, in words ("MemAvailable", this->cgroup); "" when unknown.
  std::string host_bound_by() const;
  // Address space RLIMIT_AS leaves: limit − used, at least 0; UINT64_MAX when unlimited.
  std::uint64_t address_space_left() const noexcept;
};

// This process, now: /proc/meminfo, /proc/self/cgroup with the cgroup mounts of
// /proc/self/mountinfo, getrlimit(RLIMIT_AS) and /proc/self/status. A source that cannot be read
// leaves its figures 0 (unknown / no limit).
LWLOAD_API MachineMemory machine_memory();

// The same, reading proc/… and the cgroup mounts under `root` instead of "/" (tests build such a
// tree); the address-space figures are still this process's.
LWLOAD_API MachineMemory machine_memory(const std::filesystem::path& root);

}  // namespace lwload
