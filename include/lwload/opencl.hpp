// OpenCL for applications: bring your own context, device and (in-order) queue — lwload allocates,
// imports and uploads in that context, on that queue, and holds only references of its own to them
// (clRetain*/clRelease*) — and typed access to where a tensor lives: its cl_mem, the tensor starting
// `offset` bytes in. Installed when lwload is built with OpenCL.
#pragma once

// Layer backend_opencl's public header: refused below backend_opencl in lwload's build (docs/ARCHITECTURE.md,
// "Layers").
#if defined(LWLOAD_LAYER_CORE) && !defined(LWLOAD_LAYER_BACKEND_OPENCL)
#error \
    "lwload layering: include/lwload/opencl.hpp (layer backend_opencl) is not below this layer (the layer table in meson.build says what each layer may include)"
#endif

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 300
#endif
#include <CL/cl.h>

#include <cstdint>
#include <memory>
#include <optional>

#include "lwload/backend.hpp"
#include "lwload/export.h"
#include "lwload/tensor_handle.hpp"

namespace lwload {

// `queue` may be nullptr (lwload makes its own in `context`); an out-of-order queue is not used
// (lwload's uploads rely on order) and gets an in-order sibling in the same context. The device
// is opencl:INDEX as `lwload devices` numbers it. Throws Error(usage) for a device not in the
// context or a queue of another context or device.
LWLOAD_API std::unique_ptr<Device> open_opencl_device(cl_context context, cl_device_id device,
                                                      cl_command_queue queue = nullptr,
                                                      const DeviceOverrides& overrides = {});

// The handle types of OpenCL buffers: a cl_mem ("cl_mem"), and a host pointer an OpenCL device with
// fine-grain system SVM uses in place ("cl_svm_ptr").
LWLOAD_API NativeType cl_mem_type();
LWLOAD_API NativeType cl_svm_ptr_type();

struct OpenClTensor {
  cl_mem mem;            // the tensor's buffer: its allocation, imported region or sub-buffer view
  std::uint64_t offset;  // the tensor's first byte inside `mem`
};
// nullopt when the tensor is not in a cl_mem (another device, fine-grain SVM, or skipped).
LWLOAD_API std::optional<OpenClTensor> opencl_tensor(const TensorHandle& tensor);

}  // namespace lwload
