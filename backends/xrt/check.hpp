// Turning XRT's failures into lwload errors. XRT reports every failure as an exception (its own
// derive from std::system_error, whose code is the driver's errno); this is the one place that
// decides which of them mean out of memory.
#pragma once

#include "backends/xrt/layer.hpp"

#include <exception>
#include <string>
#include <string_view>
#include <utility>

namespace lwload::xrt_backend {

// What XRT said, as one line: the exception's text.
std::string what_of(const std::exception& e);

// Throws Error(out_of_memory) for ENOMEM and std::bad_alloc, Error(device) otherwise:
// "<who>: <call> (<what>) failed: <XRT's text>".
[[noreturn]] void fail_call(const std::exception& e, std::string_view who, std::string_view call,
                            std::string_view what = {});

// Runs `f`, turning what XRT throws into fail_call's error.
template <typename F>
decltype(auto) call(std::string_view who, std::string_view call_name, std::string_view what, F&& f) {
  try {
    return std::forward<F>(f)();
  } catch (const std::exception& e) {
    fail_call(e, who, call_name, what);
  }
}

}  // namespace lwload::xrt_backend
