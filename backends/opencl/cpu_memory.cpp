// Transparent huge pages for in-process "device" memory of CPU OpenCL devices.
#include "backends/opencl/cpu_memory.hpp"

#include <sys/mman.h>

namespace lwload::opencl {

bool memory_in_process(const Session& session) {
  cl_device_type type = 0;
  return clGetDeviceInfo(session.device(), CL_DEVICE_TYPE, sizeof type, &type, nullptr) == CL_SUCCESS &&
         (type & CL_DEVICE_TYPE_CPU) != 0;
}

void advise_huge_pages(const Session& session, const cl::Buffer& mem, std::uint64_t bytes) noexcept {
#if defined(MADV_HUGEPAGE)
  constexpr std::uint64_t kHuge = 2ull << 20;
  if (bytes < 2 * kHuge || !memory_in_process(session)) return;
  cl_int status = CL_SUCCESS;
  void* host =
      session.queue.enqueueMapBuffer(mem, CL_TRUE, CL_MAP_WRITE_INVALIDATE_REGION, 0, bytes, nullptr, nullptr, &status);
  if (status != CL_SUCCESS) return;
  const auto begin = (reinterpret_cast<std::uintptr_t>(host) + kHuge - 1) / kHuge * kHuge;
  const auto end = (reinterpret_cast<std::uintptr_t>(host) + bytes) / kHuge * kHuge;
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
  cl::Event unmapped;
  if (session.queue.enqueueUnmapMemObject(mem, host, nullptr, &unmapped) == CL_SUCCESS) unmapped.wait();
#else
  (void)session, (void)mem, (void)bytes;
#endif
}

}  // namespace lwload::opencl
