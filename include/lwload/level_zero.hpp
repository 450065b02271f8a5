// Level Zero for applications: bring your own driver, context and device — lwload allocates and
// imports in that context (its own command lists for copies) and never destroys it — and typed
// access to where a tensor lives: a USM pointer, the tensor starting `offset` bytes in. Installed
// when lwload is built with Level Zero.
#pragma once

// Layer backend_level_zero's public header: refused below backend_level_zero in lwload's build (docs/ARCHITECTURE.md,
// "Layers").
#if defined(LWLOAD_LAYER_CORE) && !defined(LWLOAD_LAYER_BACKEND_LEVEL_ZERO)
#error \
    "lwload layering: include/lwload/level_zero.hpp (layer backend_level_zero) is not below this layer (the layer table in meson.build says what each layer may include)"
#endif

#include <level_zero/ze_api.h>

#include <cstdint>
#include <memory>
#include <optional>

#include "lwload/backend.hpp"
#include "lwload/export.h"
#include "lwload/tensor_handle.hpp"

namespace lwload {

// The application has called zeInit. The device is level_zero:INDEX as `lwload devices` numbers
// it. Throws Error(usage) when `device` is not one of `driver`'s devices.
LWLOAD_API std::unique_ptr<Device> open_level_zero_device(ze_driver_handle_t driver, ze_context_handle_t context,
                                                          ze_device_handle_t device,
                                                          const DeviceOverrides& overrides = {});

// The handle type of Level Zero buffers: a USM pointer ("ze_ptr").
LWLOAD_API NativeType ze_ptr_type();

struct LevelZeroTensor {
  void* pointer;         // USM (device, host or imported) memory of the tensor's buffer
  std::uint64_t offset;  // the tensor's first byte is at pointer + offset
};
// nullopt when the tensor is not on a Level Zero device (or was skipped).
LWLOAD_API std::optional<LevelZeroTensor> level_zero_tensor(const TensorHandle& tensor);

}  // namespace lwload
