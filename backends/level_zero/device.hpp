// lwload::Device for one Level Zero device: placements map onto zeMemAllocDevice (staged),
// zeMemAllocHost (direct) and host-pointer import (zero-copy); uploads go through TransferQueue.
#pragma once

#include "backends/level_zero/layer.hpp"

#include <memory>

#include "backends/level_zero/discovery.hpp"
#include "lwload/backend.hpp"

namespace lwload::level_zero {

std::unique_ptr<Device> open_device(const FoundDevice& found, const DeviceOverrides& overrides);
// The same in the application's context, which lwload uses and never destroys.
std::unique_ptr<Device> adopt_device(const FoundDevice& found, ze_context_handle_t context,
                                     const DeviceOverrides& overrides);

}  // namespace lwload::level_zero
