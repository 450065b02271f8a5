#include "loading/progress.hpp"

#include "lwload/error.hpp"

namespace lwload::loading {

Progress::Progress(const Weights::State& state, const LoadOptions& options)
    : state_(state), options_(options), tensors_(state.plan.tensors.size()) {
  for (std::size_t i = 0; i < tensors_.size(); ++i) tensors_[i].remaining = state.manifest.tensors[i].bytes;
}

void Progress::phase(std::string_view name) const {
  if (!options_.on_event) return;
  LoadEvent e;
  e.kind = LoadEvent::Kind::phase;
  e.time = std::chrono::steady_clock::now();
  e.phase = name;
  e.in_flight = in_flight;
  options_.on_event(e);
}

void Progress::event(LoadEvent::Kind kind, std::size_t tensor, std::uint64_t bytes) const {
  if (!options_.on_event) return;
  LoadEvent e;
  e.kind = kind;
  e.time = std::chrono::steady_clock::now();
  e.tensor = tensor;
  e.bytes = bytes;
  e.in_flight = in_flight;
  options_.on_event(e);
}

void Progress::start(std::size_t tensor) {
  State& s = tensors_[tensor];
  if (s.started) return;
  s.started = true;
  event(LoadEvent::Kind::tensor_start, tensor, 0);
}

bool Progress::arrived(std::size_t tensor, std::uint64_t bytes) {
  State& s = tensors_[tensor];
  s.remaining -= bytes;
  done_bytes_ += bytes;
  if (options_.on_progress) options_.on_progress(done_bytes_, state_.plan.model_bytes);
  return s.remaining == 0;
}

// Ready callbacks go out in load order: a tensor that finished early waits for those before it.
void Progress::ready(std::size_t tensor) {
  tensors_[tensor].ready = true;
  event(LoadEvent::Kind::tensor_end, tensor, 0);
  const auto& plan = state_.plan;
  while (next_ready_ < plan.tensors.size()) {
    if (plan.tensors[next_ready_].placement == Placement::skipped) {
      ++next_ready_;
      continue;
    }
    if (!tensors_[next_ready_].ready) break;
    const std::size_t i = next_ready_++;
    if (options_.on_tensor_ready) options_.on_tensor_ready(state_.handles[i]);
  }
}

void Progress::check_cancel() const {
  if (options_.cancel && options_.cancel->cancelled())
    fail(ErrorCode::cancelled, "load cancelled after ", done_bytes_, " of ", state_.plan.model_bytes,
         " bytes; everything loaded so far was released");
}

}  // namespace lwload::loading
