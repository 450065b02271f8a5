// Asynchronous uploads: cuMemcpyHtoDAsync on the session's stream, an event recorded after each,
// and one completion thread that waits on the events in submission order (a stream is in order)
// and runs each upload's TransferDone. The staging ring bounds how many are in flight.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "backends/cuda/cuda_session.hpp"
#include "lwload/backend.hpp"

namespace lwload::cuda {

class Transfers {
 public:
  explicit Transfers(std::shared_ptr<Session> session);
  ~Transfers();  // waits for every upload, then stops the completion thread
  Transfers(const Transfers&) = delete;
  Transfers& operator=(const Transfers&) = delete;

  // Starts the copy; `done` runs exactly once, on the completion thread (or here, on a refusal).
  void submit(CUdeviceptr dst, const void* src, std::size_t bytes, TransferDone done);
  void wait_idle();

 private:
  struct Pending {
    CUevent event;
    std::size_t bytes;
    TransferDone done;
  };
  void complete_loop();

  std::shared_ptr<Session> session_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Pending> in_flight_;
  int callbacks_running_ = 0;
  bool stopping_ = false;
  std::thread completer_;
};

}  // namespace lwload::cuda
