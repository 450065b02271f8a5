// Importing host ranges (Session::import_host). Read-only file pages are handed to the driver as
// CL_MEM_READ_ONLY; the caller keeps them mapped for as long as the buffer lives.
#include "backends/opencl/session.hpp"

#include "backends/opencl/buffers.hpp"
#include "backends/opencl/check.hpp"

namespace lwload::opencl {
namespace {

void* host_pointer(std::span<const std::byte> range) {
  // OpenCL takes void*; CL_MEM_READ_ONLY and read-only maps keep the driver from writing.
  return const_cast<std::byte*>(range.data());
}

ImportResult try_arm_import(const std::shared_ptr<const Session>& session, std::span<const std::byte> range,
                            std::uint64_t import_size) {
  const cl_import_properties_arm properties[] = {CL_IMPORT_TYPE_ARM, CL_IMPORT_TYPE_HOST_ARM, 0};
  cl_int status = CL_SUCCESS;
  cl_mem mem = session->import_memory_arm(session->context(), CL_MEM_READ_ONLY, properties, host_pointer(range),
                                          import_size, &status);
  if (status == CL_INVALID_VALUE || status == CL_INVALID_OPERATION)
    return {nullptr, str("clImportMemoryARM refused the range: ", error_name(status))};
  check(status, "clImportMemoryARM", " (", range.size(), " bytes on ", session->info.id(), ")");
  return {std::make_unique<ClBuffer>(session, cl::Buffer(mem), range.size(), "arm_import", Reservation{}, cl::Buffer{},
                                     0, range.data()),
          {}};
}

ImportResult try_use_host_ptr(const std::shared_ptr<const Session>& session, std::span<const std::byte> range,
                              std::uint64_t import_size) {
  cl_int status = CL_SUCCESS;
  cl::Buffer mem(session->context, CL_MEM_USE_HOST_PTR | CL_MEM_READ_ONLY, import_size, host_pointer(range), &status);
  if (status == CL_INVALID_HOST_PTR || status == CL_INVALID_VALUE)
    return {nullptr, str("clCreateBuffer(CL_MEM_USE_HOST_PTR) refused the range: ", error_name(status))};
  check(status, "clCreateBuffer", " (CL_MEM_USE_HOST_PTR, ", import_size, " bytes on ", session->info.id(), ")");

  // The spec lets an implementation cache USE_HOST_PTR memory elsewhere; a map that returns the
  // very pointer we gave shows the device works on our pages.
  void* seen = session->queue.enqueueMapBuffer(mem, CL_TRUE, CL_MAP_READ, 0, import_size, nullptr, nullptr, &status);
  check(status, "clEnqueueMapBuffer", " (verifying CL_MEM_USE_HOST_PTR on ", session->info.id(), ")");
  cl::Event unmapped;
  check(session->queue.enqueueUnmapMemObject(mem, seen, nullptr, &unmapped), "clEnqueueUnmapMemObject",
        " (verifying CL_MEM_USE_HOST_PTR on ", session->info.id(), ")");
  check(unmapped.wait(), "clWaitForEvents", " (verifying CL_MEM_USE_HOST_PTR on ", session->info.id(), ")");
  if (seen != range.data())
    return {nullptr, "CL_MEM_USE_HOST_PTR buffer maps to a different pointer: the driver copies"};
  return {std::make_unique<ClBuffer>(session, std::move(mem), range.size(), "use_host_ptr", Reservation{}, cl::Buffer{},
                                     0, range.data()),
          {}};
}

}  // namespace

ImportResult Session::import_host(std::span<const std::byte> range) const {
  const std::shared_ptr<const Session> session = shared_from_this();
  // Device::import_host held the range to the device's import ability, the alignment and Intel's
  // size multiple of 64.
  const std::uint64_t import_size = range.size();

  std::string declined;
  if (session->import.arm_import) {
    auto result = try_arm_import(session, range, import_size);
    if (result.buffer) return result;
    declined = result.declined;
  }
  if (session->import.use_host_ptr) {
    auto result = try_use_host_ptr(session, range, import_size);
    if (result.buffer) return result;
    declined += str(declined.empty() ? "" : "; ", result.declined);
  }
  if (session->import.system_svm) return {std::make_unique<SvmRange>(range), {}};
  return {nullptr, declined.empty() ? std::string("no import mechanism") : declined};
}

}  // namespace lwload::opencl
