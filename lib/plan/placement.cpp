// Placement names (CLI, JSON) and the Plan's small queries.
#include <algorithm>

#include "lwload/error.hpp"
#include "lwload/plan.hpp"

namespace lwload {

std::string_view placement_name(Placement placement) noexcept {
  switch (placement) {
    case Placement::zero_copy: return "zero_copy";
    case Placement::direct: return "direct";
    case Placement::staged: return "staged";
    case Placement::skipped: return "skipped";
  }
  return "?";
}

std::optional<Placement> parse_placement(std::string_view text) {
  if (text == "auto" || text.empty()) return std::nullopt;
  if (text == "zero-copy" || text == "zero_copy") return Placement::zero_copy;
  if (text == "direct") return Placement::direct;
  if (text == "staged") return Placement::staged;
  fail(ErrorCode::usage, "placement '", text, "': expected auto, zero-copy, direct or staged");
}

std::size_t Plan::count(Placement placement) const noexcept {
  return static_cast<std::size_t>(
      std::count_if(tensors.begin(), tensors.end(), [&](const TensorPlan& t) { return t.placement == placement; }));
}

std::size_t Plan::imported_regions() const noexcept {
  return static_cast<std::size_t>(
      std::count_if(regions.begin(), regions.end(), [](const ImportRegion& r) { return r.imported(); }));
}

std::uint64_t Plan::bytes(Placement placement, const Manifest& manifest) const noexcept {
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < tensors.size() && i < manifest.tensors.size(); ++i)
    if (tensors[i].placement == placement) total += manifest.tensors[i].bytes;
  return total;
}

std::size_t Schedule::reads() const noexcept {
  std::size_t total = 0;
  for (const auto& queue : queues) total += queue.size();
  return total;
}

}  // namespace lwload
