// In-order completion of asynchronous uploads, for backends whose driver signals completion with
// a waitable object (a CUDA event, a Vulkan fence): each submitted upload brings a `wait` that
// blocks until its copy has finished (and releases what it used), and one thread runs the waits
// in submission order — the order an in-order stream or queue completes them — then the upload's
// TransferDone. wait_idle() returns once every done() has returned.
#pragma once

#include "backends/layer.hpp"

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

#include "lwload/backend.hpp"

namespace lwload {

class CompletionQueue {
 public:
  // Blocks until the copy is complete; returns its error, or nullptr. Must not throw.
  using Wait = std::function<std::exception_ptr()>;

  CompletionQueue();
  ~CompletionQueue();  // waits for everything pushed, then stops the thread
  CompletionQueue(const CompletionQueue&) = delete;
  CompletionQueue& operator=(const CompletionQueue&) = delete;

  void push(Wait wait, TransferDone done);
  void wait_idle();

 private:
  struct Pending {
    Wait wait;
    TransferDone done;
  };
  void run();

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Pending> pending_;
  bool busy_ = false;  // a wait or done() is running
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace lwload
