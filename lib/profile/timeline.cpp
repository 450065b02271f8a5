// The loader's activity on the sampler's time axis: phases, tensor spans and bytes in flight.
#include <algorithm>
#include <cstdint>
#include <limits>

#include "lwload/profile.hpp"

namespace lwload::profile {

double Timeline::ms(Clock::time_point t) const noexcept {
  return std::chrono::duration<double, std::milli>(t - origin_).count();
}

void Timeline::phase_begin(std::string_view name, Clock::time_point t) {
  std::lock_guard lock(mutex_);
  const double at = ms(t);
  phases_.push_back({std::string(name), at, -1});
}

void Timeline::phase_end(std::string_view name, Clock::time_point t) {
  std::lock_guard lock(mutex_);
  // The most recent open span of that name; an end without a begin becomes a zero-length span.
  for (auto it = phases_.rbegin(); it != phases_.rend(); ++it) {
    if (it->name == name && it->end_ms < 0) {
      it->end_ms = ms(t);
      return;
    }
  }
  phases_.push_back({std::string(name), ms(t), ms(t)});
}

// A tensor's latest span is found through open_ (tensor index → span position + 1, 0 = none), not
// by searching back: a zero_copy load of a million tensors opens them all before the first ends,
// and a search per end was quadratic (10 minutes). A second begin of a tensor whose span is still
// open, or a tensor index past the table, falls back to the search.
namespace {
constexpr std::size_t kMaxIndexed = std::size_t{1} << 26;  // tensor indices the table covers
}

void Timeline::tensor_begin(std::size_t tensor, std::uint64_t bytes, Clock::time_point t) {
  std::lock_guard lock(mutex_);
  tensors_.push_back({tensor, ms(t), -1, bytes});
  if (tensor < kMaxIndexed && tensors_.size() < std::numeric_limits<std::uint32_t>::max()) {
    if (tensor >= open_.size()) open_.resize(std::max(tensor + 1, 2 * open_.size()), 0);
    open_[tensor] = static_cast<std::uint32_t>(tensors_.size());
  }
}

void Timeline::tensor_end(std::size_t tensor, Clock::time_point t) {
  std::lock_guard lock(mutex_);
  if (tensor < open_.size() && open_[tensor] != 0) {
    TensorSpan& span = tensors_[open_[tensor] - 1];
    open_[tensor] = 0;
    if (span.end_ms < 0) {
      span.end_ms = ms(t);
      return;
    }
  }
  for (auto it = tensors_.rbegin(); it != tensors_.rend(); ++it) {
    if (it->tensor == tensor && it->end_ms < 0) {
      it->end_ms = ms(t);
      return;
    }
  }
  tensors_.push_back({tensor, ms(t), ms(t), 0});
}

void Timeline::in_flight(std::uint64_t bytes, Clock::time_point t) {
  std::lock_guard lock(mutex_);
  in_flight_.push_back({ms(t), bytes});
}

namespace {
// A copy of `spans` with the ones still open closed at `end_ms`.
template <typename Span>
std::vector<Span> closed_at(std::vector<Span> spans, double end_ms) {
  for (auto& span : spans)
    if (span.end_ms < 0) span.end_ms = end_ms;
  return spans;
}
}  // namespace

std::vector<PhaseSpan> Timeline::phases(Clock::time_point end) const {
  std::lock_guard lock(mutex_);
  return closed_at(phases_, ms(end));
}

std::vector<TensorSpan> Timeline::tensors(Clock::time_point end) const {
  std::lock_guard lock(mutex_);
  return closed_at(tensors_, ms(end));
}

std::vector<InFlightPoint> Timeline::in_flight_points() const {
  std::lock_guard lock(mutex_);
  std::vector<InFlightPoint> out = in_flight_;
  // Events arrive from several threads; the curve needs time order.
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.ms < b.ms; });
  return out;
}

std::uint64_t Timeline::max_in_flight() const {
  std::lock_guard lock(mutex_);
  std::uint64_t m = 0;
  for (const auto& p : in_flight_) m = std::max(m, p.bytes);
  return m;
}

}  // namespace lwload::profile
