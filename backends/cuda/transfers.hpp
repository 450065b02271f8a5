// Asynchronous uploads: cuMemcpyHtoDAsync on the session's stream, an event recorded after each,
// and the CompletionQueue waits on the events in submission order (a stream is in order) and runs
// each upload's TransferDone. The staging ring bounds how many are in flight.
#pragma once

#include "backends/cuda/layer.hpp"

#include <memory>

#include "backends/completion_queue.hpp"
#include "backends/cuda/session.hpp"
#include "lwload/backend.hpp"

namespace lwload::cuda {

class Transfers {
 public:
  explicit Transfers(std::shared_ptr<Session> session) : session_(std::move(session)) {}

  // Starts the copy; `done` runs exactly once, on the completion thread (or here, on a refusal).
  void submit(CUdeviceptr dst, const void* src, std::size_t bytes, TransferDone done);
  void wait_idle() { completions_.wait_idle(); }

 private:
  std::shared_ptr<Session> session_;
  CompletionQueue completions_;  // last: drained before the session goes
};

}  // namespace lwload::cuda
