// XRT for applications (AMD's Ryzen AI NPUs, Alveo cards): bring your own xrt::device — lwload
// makes its buffer objects on it and holds a reference, closing nothing of the application's — and
// typed access to where a tensor lives: an xrt::bo, the tensor starting `offset` bytes in (a
// zero-copy tensor gets a sub-buffer that starts at it, offset 0). Installed when lwload is built
// with XRT; include paths as XRT's own (-I/usr/include/xrt on Debian).
#pragma once

// Layer backend_xrt's public header: refused below backend_xrt in lwload's build (docs/ARCHITECTURE.md, "Layers").
#if defined(LWLOAD_LAYER_CORE) && !defined(LWLOAD_LAYER_BACKEND_XRT)
#error \
    "lwload layering: include/lwload/xrt.hpp (layer backend_xrt) is not below this layer (the layer table in meson.build says what each layer may include)"
#endif

#include <xrt/xrt_bo.h>
#include <xrt/xrt_device.h>

#include <cstdint>
#include <memory>
#include <optional>

#include "lwload/backend.hpp"
#include "lwload/export.h"
#include "lwload/tensor_handle.hpp"

namespace lwload {

// The device is xrt:INDEX as `lwload devices` numbers it (index 0 when XRT does not enumerate it).
// Throws Error(usage) for an empty xrt::device.
LWLOAD_API std::unique_ptr<Device> open_xrt_device(const ::xrt::device& device, const DeviceOverrides& overrides = {});

// The handle type of XRT buffers ("xrt_bo"): NativeHandle::handle is a const xrt::bo*, valid as
// long as the Weights.
LWLOAD_API NativeType xrt_bo_type();

struct XrtTensor {
  ::xrt::bo bo;          // a reference to the tensor's buffer object (copies share it)
  std::uint64_t offset;  // the tensor's first byte is at offset in bo
};
// nullopt when the tensor is not on an XRT device (or was skipped). The bo keeps the buffer alive
// for XRT, but its bytes are lwload's only while the Weights live (zero-copy: the file's pages).
LWLOAD_API std::optional<XrtTensor> xrt_tensor(const TensorHandle& tensor);

}  // namespace lwload
