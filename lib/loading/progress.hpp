// What the application hears about a load, in one place: phases and per-tensor events, byte
// progress, ready callbacks in load order, and cancellation. Everything here runs on the thread
// that called load() (the pipeline's completions are posted back to it), so it needs no locks.
// User callbacks may throw: that fails the load.
#pragma once

#include "loading/layer.hpp"

#include <chrono>
#include <cstdint>
#include <string_view>
#include <vector>

#include "loading/weights_state.hpp"

namespace lwload::loading {

class Progress {
 public:
  // `state` provides the plan, the manifest and (once made) the handles ready callbacks receive.
  Progress(const Weights::State& state, const LoadOptions& options);

  void phase(std::string_view name) const;
  void event(LoadEvent::Kind kind, std::size_t tensor, std::uint64_t bytes) const;
  // The tensor's first byte is requested (once; later calls do nothing).
  void start(std::size_t tensor);
  // `bytes` of the tensor are on the device; true when that completes it (then call ready()).
  bool arrived(std::size_t tensor, std::uint64_t bytes);
  // The tensor is usable by the device: its ready callback goes out once every earlier one has.
  void ready(std::size_t tensor);
  // Throws Error(cancelled) when the caller's token says so.
  void check_cancel() const;

  // Staging bytes read but not yet uploaded, reported with every event (the pipeline keeps it).
  std::uint64_t in_flight = 0;

 private:
  struct State {
    std::uint64_t remaining = 0;
    bool started = false;
    bool ready = false;
  };

  const Weights::State& state_;
  const LoadOptions& options_;
  std::vector<State> tensors_;  // per tensor
  std::uint64_t done_bytes_ = 0;
  std::size_t next_ready_ = 0;
};

}  // namespace lwload::loading
