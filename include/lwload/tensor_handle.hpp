// A loaded tensor: where it lives on the device (Weights::tensors(), LoadOptions::on_tensor_ready,
// a backend's typed getter such as opencl_tensor()). Plain types over core's (TensorInfo,
// DeviceBuffer, NativeHandle): the loader fills a handle and a backend reads it, neither depending
// on the other. The planner decides each Placement (plan.hpp names and parses them).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "lwload/backend.hpp"
#include "lwload/manifest.hpp"

namespace lwload {

enum class Placement : std::uint8_t {
  zero_copy,  // the device uses the file's mapped pages (an ImportRegion)
  direct,     // host-visible device memory the file is read straight into
  staged,     // device-local memory filled through the staging ring
  skipped,    // not loaded (not selected, STRING tensors, empty tensors); the reason says why
};

// A loaded tensor: where it lives on the device.
// One per tensor (a million tensors, a million handles): 88 bytes, the two one-byte fields side
// by side.
struct TensorHandle {
  std::size_t index = 0;             // the tensor's index: Manifest::tensors, Plan::tensors, Weights::tensors()
  const TensorInfo* info = nullptr;  // points into Weights::manifest()
  Placement placement = Placement::staged;
  // zero_copy: true when `buffer` is a view of the region that starts at the tensor (an OpenCL
  // sub-buffer where the offset meets CL_DEVICE_MEM_BASE_ADDR_ALIGN; offset is then 0); false
  // when the tensor is addressed as (region buffer, offset).
  bool view = false;
  DeviceBuffer* buffer = nullptr;  // its allocation, imported region or a view; nullptr when skipped
  NativeHandle native;             // buffer->native()
  std::uint64_t offset = 0;        // the tensor's first byte inside `buffer`
  std::uint64_t bytes = 0;
  std::string_view mechanism;  // buffer->mechanism(): "mapped_file", "host_visible", ...
};

}  // namespace lwload
