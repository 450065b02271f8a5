// What the running kernel, and any sandbox around the process (seccomp), let lwload use: probed
// once per process, each with the fallback lwload uses where it is refused. Edge kernels (5.10 and
// 5.15 on Jetson, Rockchip and Android GKI) predate MADV_POPULATE_READ and cachestat; sandboxes
// refuse io_uring and process_vm_readv. `lwload doctor` prints these.
#pragma once

#include "io/layer.hpp"

#include <string>

namespace lwload::io {

struct KernelFeature {
  bool available = false;
  int error = 0;  // errno of the refusal when not available (EINVAL, ENOSYS, EPERM)
  // "EINVAL" etc., empty when available.
  std::string refusal() const;
};

// madvise(MADV_POPULATE_READ) (Linux 5.14): populates a mapped range and reports a lost page as
// EFAULT. Without it, mappings made for MapAccess::resident are populated by MAP_POPULATE.
const KernelFeature& populate_read();

// cachestat(2) (Linux 6.5): how much of a file range is in the page cache. Without it, mincore(2)
// over a transient mapping.
const KernelFeature& cachestat();

// process_vm_readv on the own process: the guarded copy (io/fault_guard.hpp). Without it, a pipe.
const KernelFeature& vm_readv();

}  // namespace lwload::io
