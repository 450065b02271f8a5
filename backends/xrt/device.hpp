// lwload::Device for one XRT device: placements map onto device-only buffer objects (staged),
// host-mapped ones (direct) and user-pointer ones (zero-copy); an upload is a sync of the staging
// slot and a copy on the device.
#pragma once

#include "backends/xrt/layer.hpp"

#include <xrt/xrt_device.h>

#include <memory>

#include "lwload/backend.hpp"

namespace lwload::xrt_backend {

// `device` is lwload's own (from discovery) or the application's; `info` describes it.
std::unique_ptr<Device> open_device(::xrt::device device, const DeviceInfo& info, const DeviceOverrides& overrides);

}  // namespace lwload::xrt_backend
