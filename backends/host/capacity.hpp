// How much memory the host device can still give a load: the least of what the kernel says is
// available (MemAvailable), what this process's cgroups still allow (v1 and v2, nested:
// lwload/machine.hpp) and what RLIMIT_AS leaves of the address space. The planner refuses a plan that needs
// more, before anything is allocated, instead of letting the OOM killer decide mid-load.
#pragma once

#include "backends/host/layer.hpp"

#include <cstdint>
#include <string>

namespace lwload::host {

struct HostCapacity {
  std::uint64_t bytes = 0;  // 0 = unknown (no source could be read)
  std::string bound_by;     // which limit is the least, in words ("MemAvailable", "cgroup memory.max", ...)
};

HostCapacity host_capacity();

}  // namespace lwload::host
