// Turning Level Zero results into lwload errors: one place that names ze_result_t values and
// decides which of them are out-of-memory (so callers can tell "too big" from "driver broke").
#pragma once

#include "backends/level_zero/layer.hpp"

#include <level_zero/ze_api.h>

#include <string_view>

namespace lwload::level_zero {

std::string_view result_name(ze_result_t result) noexcept;

// Throws Error(out_of_memory) for the out-of-memory and unsupported-size results, Error(device)
// otherwise: "<who>: <call> failed: <RESULT_NAME> (<what>)".
[[noreturn]] void fail_call(ze_result_t result, std::string_view who, std::string_view call,
                            std::string_view what = {});

inline void check(ze_result_t result, std::string_view who, std::string_view call, std::string_view what = {}) {
  if (result != ZE_RESULT_SUCCESS) fail_call(result, who, call, what);
}

}  // namespace lwload::level_zero
