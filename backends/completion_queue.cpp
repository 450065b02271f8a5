#include "backends/completion_queue.hpp"

namespace lwload {

CompletionQueue::CompletionQueue() : thread_([this] { run(); }) {}

CompletionQueue::~CompletionQueue() {
  wait_idle();
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void CompletionQueue::push(Wait wait, TransferDone done) {
  {
    const std::lock_guard lock(mutex_);
    pending_.push_back(Pending{std::move(wait), std::move(done)});
  }
  changed_.notify_all();
}

void CompletionQueue::wait_idle() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return pending_.empty() && !busy_; });
}

void CompletionQueue::run() {
  for (;;) {
    Pending next;
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] { return stopping_ || !pending_.empty(); });
      if (pending_.empty()) return;  // stopping with nothing left
      next = std::move(pending_.front());
      pending_.pop_front();
      busy_ = true;
    }
    const std::exception_ptr error = next.wait();
    try {
      if (next.done) next.done(error);
    } catch (...) {
      // A throwing callback must not take the completion thread down; the loader reports its own errors.
    }
    {
      const std::lock_guard lock(mutex_);
      busy_ = false;
    }
    changed_.notify_all();
  }
}

}  // namespace lwload
