// One check every backend's suite runs on its own device: what the planner does with the budgets
// the device reports, lowered below the model through DeviceOverrides.
#pragma once

#include <string>

namespace lwload::test {

// On `device` ("host", "opencl:0", "vulkan:0", ...): with less memory free than the direct and
// staged tensors need, the load is refused with the numbers before anything is allocated; on a
// device that imports, zero-copy regions past the import limit load direct (or staged) instead,
// with the reason, and verify.
void check_device_budgets(const std::string& device);

}  // namespace lwload::test
