// On a CPU OpenCL device (PoCL) "device" memory is ordinary memory of this process, first touched
// by the load's own copy: with 4 KiB pages that is one page fault per 4 KiB and the fault cost
// dominates the load (measured on PoCL: 256 MiB staged upload 430 ms into fresh 4 KiB pages,
// 130-170 ms with transparent huge pages, 80-95 ms into already touched memory). So lwload asks
// for transparent huge pages on large buffers of CPU devices. Advice only: nothing breaks when the
// kernel ignores it.
#pragma once

#include "backends/opencl/layer.hpp"

#include <cstdint>

#include "backends/opencl/session.hpp"

namespace lwload::opencl {

// True when the device's memory is this process's memory (CL_DEVICE_TYPE_CPU).
bool memory_in_process(const Session& session);

// madvise(MADV_HUGEPAGE) on the whole 2 MiB pages inside `mem` (found by mapping it without
// reading: CL_MAP_WRITE_INVALIDATE_REGION). No-op off CPU devices and for buffers under 4 MiB;
// failures are ignored (it is an optimisation).
void advise_huge_pages(const Session& session, const cl::Buffer& mem, std::uint64_t bytes) noexcept;

}  // namespace lwload::opencl
