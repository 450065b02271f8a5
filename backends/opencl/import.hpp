// Zero-copy imports of mapped file pages, tried in order of how sure they are to avoid a copy:
// cl_arm_import_memory (never copies), CL_MEM_USE_HOST_PTR (verified: mapping the buffer must
// give back the same pointer), fine-grain system SVM (the pointer is the device address).
#pragma once

#include "backends/opencl/layer.hpp"

#include <memory>
#include <span>
#include <string>

#include "backends/opencl/session.hpp"
#include "lwload/backend.hpp"

namespace lwload::opencl {

// Throws Error(out_of_memory) when the range exceeds the device's max allocation and
// Error(device) when a call fails for another reason than "this memory cannot be imported".
ImportResult import_range(const std::shared_ptr<const Session>& session, std::span<const std::byte> range);

}  // namespace lwload::opencl
