#include "backends/cuda/cuda_transfers.hpp"

#include "lwload/error.hpp"

namespace lwload::cuda {

Transfers::Transfers(std::shared_ptr<Session> session)
    : session_(std::move(session)), completer_([this] { complete_loop(); }) {}

Transfers::~Transfers() {
  wait_idle();
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  completer_.join();
}

void Transfers::submit(CUdeviceptr dst, const void* src, std::size_t bytes, TransferDone done) {
  const Driver& d = session_->driver();
  std::exception_ptr error;
  try {
    const ContextScope scope(*session_);
    session_->check(d.cuMemcpyHtoDAsync_v2(dst, src, bytes, session_->stream()), "cuMemcpyHtoDAsync",
                    str(bytes, " bytes, upload"));
    CUevent event = nullptr;
    session_->check(d.cuEventCreate(&event, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
    const CUresult recorded = d.cuEventRecord(event, session_->stream());
    if (recorded != CUDA_SUCCESS) d.cuEventDestroy_v2(event);
    session_->check(recorded, "cuEventRecord");
    {
      const std::lock_guard lock(mutex_);
      in_flight_.push_back(Pending{event, bytes, std::move(done)});
    }
    changed_.notify_all();
    return;
  } catch (...) {
    error = std::current_exception();
  }
  done(error);
}

void Transfers::wait_idle() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return in_flight_.empty() && callbacks_running_ == 0; });
}

void Transfers::complete_loop() {
  const Driver& d = session_->driver();
  for (;;) {
    Pending pending;
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] { return stopping_ || !in_flight_.empty(); });
      if (in_flight_.empty()) return;  // stopping with nothing left
      pending = std::move(in_flight_.front());
      in_flight_.pop_front();
      ++callbacks_running_;
    }
    std::exception_ptr error;
    {
      const ContextScope scope(*session_);
      const CUresult r = d.cuEventSynchronize(pending.event);
      d.cuEventDestroy_v2(pending.event);
      try {
        session_->check(r, "cuEventSynchronize", str(pending.bytes, " bytes, upload"));
      } catch (...) {
        error = std::current_exception();
      }
    }
    try {
      if (pending.done) pending.done(error);
    } catch (...) {
      // A throwing callback must not take the completion thread down; the loader reports its own errors.
    }
    {
      const std::lock_guard lock(mutex_);
      --callbacks_running_;
    }
    changed_.notify_all();
  }
}

}  // namespace lwload::cuda
