// Finding OpenCL devices and describing them in lwload's terms: every device of every platform the
// ICD loader knows, numbered by position across platforms (opencl:0, opencl:1, ...), with the
// facts the planner needs (unified or discrete memory, import ability, alignments, limits).
#pragma once

#include "backends/opencl/layer.hpp"

#include <vector>

#include "backends/opencl/bindings.hpp"
#include "lwload/device.hpp"

namespace lwload::opencl {

// How a unified-memory device can use host pages in place, best first.
struct ImportAbility {
  bool arm_import = false;    // cl_arm_import_memory: imports host memory, never copies
  bool use_host_ptr = false;  // CL_MEM_USE_HOST_PTR on a unified device (verified per import)
  bool system_svm = false;    // CL_DEVICE_SVM_FINE_GRAIN_SYSTEM: any host pointer is usable
};

struct FoundDevice {
  cl::Platform platform;
  cl::Device device;
  DeviceInfo info;  // as the API reports it, before user overrides
  ImportAbility import;
};

// All devices; empty when no ICD, platform or device is present (that is not an error). Throws
// Error(device) when a present device fails to answer a query.
std::vector<FoundDevice> discover_devices();

// An application's device (lwload::open_opencl_device): described as discovery would, numbered by
// its place in discover_devices(); one not listed there (a sub-device) is numbered after them.
FoundDevice describe_device(cl_device_id device);

}  // namespace lwload::opencl
