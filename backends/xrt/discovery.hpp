// Finding XRT devices: the devices XRT enumerates (through whichever driver shim it loads) described
// as lwload DeviceInfo — the name XRT reports, the kind and memory model that name implies, the
// page-aligned user-pointer import XRT offers (xrt::bo over existing host memory).
#pragma once

#include "backends/xrt/layer.hpp"

#include <xrt/xrt_device.h>

#include <string>
#include <vector>

#include "lwload/device.hpp"

namespace lwload::xrt_backend {

struct FoundDevice {
  ::xrt::device device;
  DeviceInfo info;
};

// Every device XRT enumerates; empty when XRT finds none or cannot load a driver shim (XILINX_XRT
// unset, no driver), and then `*why` says what XRT answered. Indices in DeviceInfo::index are
// XRT's device indices.
std::vector<FoundDevice> discover(std::string* why = nullptr);

// The DeviceInfo of an application's device: its XRT index where a device discovery opens is the
// same core device, else described as index 0 (XRT's noop shim makes a new one per open).
DeviceInfo describe_adopted(const ::xrt::device& device);

}  // namespace lwload::xrt_backend
