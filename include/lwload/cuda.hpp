// Bring your own CUDA context: lwload allocates, registers and uploads in the application's
// CUcontext (and on its CUstream, when given), and never releases either. The device is cuda:INDEX
// (the CUdevice the context belongs to). Throws Error(usage) when no NVIDIA driver is present.
// A tensor's handle on a CUDA device is a CUdeviceptr: NativeHandle{cu_deviceptr_type(), ptr}, the
// tensor starting TensorHandle::offset bytes into it.
#pragma once

// Layer backend_cuda's public header: refused below backend_cuda in lwload's build (docs/ARCHITECTURE.md, "Layers").
#if defined(LWLOAD_LAYER_CORE) && !defined(LWLOAD_LAYER_BACKEND_CUDA)
#error \
    "lwload layering: include/lwload/cuda.hpp (layer backend_cuda) is not below this layer (the layer table in meson.build says what each layer may include)"
#endif

#include <cstdint>
#include <memory>

#include "lwload/backend.hpp"
#include "lwload/export.h"

namespace lwload {

LWLOAD_API std::unique_ptr<Device> open_cuda_device(void* cu_context, void* cu_stream, std::uint32_t index = 0,
                                                    const DeviceOverrides& overrides = {});

// The handle type of CUDA buffers: a CUdeviceptr ("cu_deviceptr").
LWLOAD_API NativeType cu_deviceptr_type();

}  // namespace lwload
