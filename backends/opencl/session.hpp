// What one opened OpenCL device shares with every buffer, import and staging slot it hands out:
// the context, the device, its in-order queue and its (override-applied) facts. Held by
// shared_ptr so buffers stay valid even if the application drops the Device first. It makes the
// device's buffers, as the other GPU backends' sessions do.
#pragma once

#include "backends/opencl/layer.hpp"

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "backends/opencl/bindings.hpp"
#include "backends/opencl/discovery.hpp"
#include "backends/opencl/memory_account.hpp"
#include "lwload/backend.hpp"
#include "lwload/device.hpp"

namespace lwload::opencl {

// clImportMemoryARM's signature (cl_arm_import_memory), looked up per platform at open time.
using ImportMemoryArmFn = cl_mem(CL_API_CALL*)(cl_context, cl_mem_flags, const cl_import_properties_arm*, void*,
                                               std::size_t, cl_int*);

struct Session : std::enable_shared_from_this<Session> {
  cl::Platform platform;
  cl::Device device;
  cl::Context context;
  // One in-order queue carries uploads, maps and read-backs; several uploads may still be in
  // flight on it, and completion is observed per command through its event.
  cl::CommandQueue queue;
  DeviceInfo info;       // with the user's overrides applied
  ImportAbility import;  // what imports are allowed after the overrides
  ImportMemoryArmFn import_memory_arm = nullptr;
  // Device memory allocated through this device (not imports), against CL_DEVICE_GLOBAL_MEM_SIZE.
  std::shared_ptr<MemoryAccount> account;

  // How errors name the device ("opencl:0").
  std::string label() const { return info.id(); }

  // Device-local or host-visible memory (buffers.cpp); Error(out_of_memory) past
  // CL_DEVICE_GLOBAL_MEM_SIZE, Error(usage) for host-visible memory on a discrete device.
  std::unique_ptr<DeviceBuffer> allocate(std::uint64_t bytes, MemoryPlace place) const;
  // Zero-copy imports of mapped file pages (import.cpp), tried in order of how sure they are to
  // avoid a copy: cl_arm_import_memory (never copies), CL_MEM_USE_HOST_PTR (verified: mapping the
  // buffer must give back the same pointer), fine-grain system SVM (the pointer is the device
  // address). Throws Error(out_of_memory) when the range exceeds the device's max allocation and
  // Error(device) when a call fails for another reason than "this memory cannot be imported".
  ImportResult import_host(std::span<const std::byte> range) const;
};

// Creates the context and queue for `found` and applies `overrides`. Throws Error(device).
std::shared_ptr<Session> open_session(const FoundDevice& found, const DeviceOverrides& overrides);

// Works in the application's `context` (which must hold found.device) and on its in-order `queue`
// when one is given (nullptr, or an out-of-order queue: lwload's own queue in that context). The
// Session holds one reference (clRetain*) to each while its buffers live and drops only that one.
// Throws Error(usage) for a queue of another context or device, or a device not in the context.
std::shared_ptr<Session> adopt_session(const FoundDevice& found, cl_context context, cl_command_queue queue,
                                       const DeviceOverrides& overrides);

}  // namespace lwload::opencl
