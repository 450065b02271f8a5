// Checked byte arithmetic: every byte sum the planner makes (model bytes, mapped, allocated,
// pinned, ...) goes through these, so a hostile header's sizes cannot wrap a total past 2^64 into
// a small number that fits.
#pragma once

#include "core/layer.hpp"

#include <cstdint>
#include <limits>
#include <string_view>

#include "lwload/error.hpp"

namespace lwload {

// a + b; Error(does_not_fit) naming `what` when the sum passes 2^64 − 1.
inline std::uint64_t checked_add(std::uint64_t a, std::uint64_t b, std::string_view what) {
  if (b > std::numeric_limits<std::uint64_t>::max() - a)
    fail(ErrorCode::does_not_fit, what, ": ", a, " + ", b, " bytes passes 2^64; nothing was allocated");
  return a + b;
}

// a + b, saturating at 2^64 − 1 (for noexcept queries: a saturated total is too big for any limit).
constexpr std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) noexcept {
  return b > std::numeric_limits<std::uint64_t>::max() - a ? std::numeric_limits<std::uint64_t>::max() : a + b;
}

}  // namespace lwload
