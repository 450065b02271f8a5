// Event-driven upload queue for Level Zero (see ze_transfer_queue.hpp).
#include "backends/level_zero/ze_transfer_queue.hpp"

#include <limits>

#include "backends/level_zero/ze_check.hpp"
#include "lwload/error.hpp"

namespace lwload::ze {

TransferQueue::TransferQueue(std::shared_ptr<Session> session, std::uint32_t max_in_flight)
    : session_(std::move(session)) {
  try {
    const ze_command_queue_desc_t list_desc{ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, nullptr, session_->copy_ordinal(), 0,
                                            0, ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS, ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
    check(zeCommandListCreateImmediate(session_->context(), session_->device(), &list_desc, &list_),
          session_->label(), "zeCommandListCreateImmediate", "upload list");
    const ze_event_pool_desc_t pool_desc{ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, nullptr, ZE_EVENT_POOL_FLAG_HOST_VISIBLE,
                                         max_in_flight};
    ze_device_handle_t device = session_->device();
    check(zeEventPoolCreate(session_->context(), &pool_desc, 1, &device, &pool_), session_->label(),
          "zeEventPoolCreate");
    events_.reserve(max_in_flight);
    for (std::uint32_t i = 0; i < max_in_flight; ++i) {
      const ze_event_desc_t event_desc{ZE_STRUCTURE_TYPE_EVENT_DESC, nullptr, i, ZE_EVENT_SCOPE_FLAG_HOST,
                                       ZE_EVENT_SCOPE_FLAG_HOST};
      ze_event_handle_t event = nullptr;
      check(zeEventCreate(pool_, &event_desc, &event), session_->label(), "zeEventCreate");
      events_.push_back(event);
      free_events_.push_back(i);
    }
    completer_ = std::thread([this] { complete_loop(); });
  } catch (...) {
    release_all();
    throw;
  }
}

TransferQueue::~TransferQueue() {
  wait_idle();
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (completer_.joinable()) completer_.join();
  release_all();
}

void TransferQueue::release_all() noexcept {
  for (ze_event_handle_t event : events_) zeEventDestroy(event);
  events_.clear();
  if (pool_ != nullptr) zeEventPoolDestroy(pool_);
  pool_ = nullptr;
  if (list_ != nullptr) zeCommandListDestroy(list_);
  list_ = nullptr;
}

void TransferQueue::submit(void* dst, const void* src, std::size_t bytes, TransferDone done) {
  std::uint32_t index = 0;
  {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return !free_events_.empty(); });
    index = free_events_.back();
    free_events_.pop_back();
  }
  ze_result_t result = ZE_RESULT_SUCCESS;
  {
    std::lock_guard append(append_mutex_);
    result = zeCommandListAppendMemoryCopy(list_, dst, src, bytes, events_[index], 0, nullptr);
    if (result == ZE_RESULT_SUCCESS) {
      std::lock_guard lock(mutex_);
      in_flight_.push_back(Pending{index, std::move(done), bytes});
    }
  }
  if (result == ZE_RESULT_SUCCESS) {
    changed_.notify_all();
    return;
  }
  {
    std::lock_guard lock(mutex_);
    free_events_.push_back(index);
  }
  changed_.notify_all();
  std::exception_ptr error;
  try {
    fail_call(result, session_->label(), "zeCommandListAppendMemoryCopy", str(bytes, " bytes, upload"));
  } catch (...) {
    error = std::current_exception();
  }
  done(error);
}

void TransferQueue::wait_idle() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return in_flight_.empty() && callbacks_running_ == 0; });
}

void TransferQueue::complete_loop() {
  for (;;) {
    Pending* front = nullptr;
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] { return stopping_ || !in_flight_.empty(); });
      if (in_flight_.empty()) return;  // stopping with nothing left
      front = &in_flight_.front();     // deque front stays valid while pushes go to the back
    }
    const ze_result_t result = zeEventHostSynchronize(events_[front->event_index], std::numeric_limits<std::uint64_t>::max());
    std::exception_ptr error;
    if (result != ZE_RESULT_SUCCESS) {
      try {
        fail_call(result, session_->label(), "zeEventHostSynchronize", str(front->bytes, " bytes, upload"));
      } catch (...) {
        error = std::current_exception();
      }
    }
    zeEventHostReset(events_[front->event_index]);
    TransferDone done = std::move(front->done);
    {
      // The event is free before the callback runs: done() may submit the next upload at once.
      std::lock_guard lock(mutex_);
      free_events_.push_back(front->event_index);
      in_flight_.pop_front();
      ++callbacks_running_;
    }
    changed_.notify_all();
    try {
      if (done) done(error);
    } catch (...) {
      // A throwing callback must not take the completion thread down; the loader reports its own errors.
    }
    {
      std::lock_guard lock(mutex_);
      --callbacks_running_;  // finish() returns only after every done() has returned
    }
    changed_.notify_all();
  }
}

}  // namespace lwload::ze
