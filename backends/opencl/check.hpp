// Translating OpenCL status codes into lwload::Error. Every failing call is reported with its
// name, the code's symbolic name and what lwload was doing, so "clCreateBuffer failed:
// CL_MEM_OBJECT_ALLOCATION_FAILURE (-4) allocating 2 GiB on opencl:0" reaches the user instead of
// a bare number.
#pragma once

#include "backends/opencl/layer.hpp"

#include <string_view>

#include "backends/opencl/bindings.hpp"
#include "lwload/error.hpp"

namespace lwload::opencl {

// "CL_OUT_OF_RESOURCES", or "unknown OpenCL error" for codes this table does not know.
std::string_view error_name(cl_int code) noexcept;

// The allocation failures: the device (not the request) ran out of something.
bool is_out_of_memory(cl_int code) noexcept;

// Throws Error(out_of_memory) for allocation failures and Error(device) otherwise, naming `call`,
// the code and the context parts. Does nothing for CL_SUCCESS.
template <typename... Context>
void check(cl_int code, std::string_view call, const Context&... context) {
  if (code == CL_SUCCESS) return;
  fail(is_out_of_memory(code) ? ErrorCode::out_of_memory : ErrorCode::device, call, " failed: ", error_name(code), " (",
       code, ")", context...);
}

}  // namespace lwload::opencl
