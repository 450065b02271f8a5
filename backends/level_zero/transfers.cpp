// Event-driven upload queue for Level Zero (see transfers.hpp).
#include "backends/level_zero/transfers.hpp"

#include <limits>

#include "backends/level_zero/check.hpp"
#include "lwload/error.hpp"

namespace lwload::level_zero {

TransferQueue::TransferQueue(std::shared_ptr<Session> session, std::uint32_t max_in_flight)
    : session_(std::move(session)) {
  try {
    const ze_command_queue_desc_t list_desc{ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC,
                                            nullptr,
                                            session_->copy_ordinal(),
                                            0,
                                            0,
                                            ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS,
                                            ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
    check(zeCommandListCreateImmediate(session_->context(), session_->device(), &list_desc, &list_), session_->label(),
          "zeCommandListCreateImmediate", "upload list");
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
  } catch (...) {
    release_all();
    throw;
  }
}

TransferQueue::~TransferQueue() {
  completions_.wait_idle();  // every event waited on and handed back before the pool goes
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

std::uint32_t TransferQueue::take_event() {
  std::unique_lock lock(mutex_);
  freed_.wait(lock, [&] { return !free_events_.empty(); });
  const std::uint32_t index = free_events_.back();
  free_events_.pop_back();
  return index;
}

void TransferQueue::give_back(std::uint32_t index) {
  {
    const std::lock_guard lock(mutex_);
    free_events_.push_back(index);
  }
  freed_.notify_all();
}

void TransferQueue::submit(void* dst, const void* src, std::size_t bytes, TransferDone done) {
  const std::uint32_t index = take_event();
  ze_result_t result = ZE_RESULT_SUCCESS;
  {
    const std::lock_guard append(append_mutex_);
    result = zeCommandListAppendMemoryCopy(list_, dst, src, bytes, events_[index], 0, nullptr);
  }
  if (result != ZE_RESULT_SUCCESS) {
    give_back(index);
    fail_call(result, session_->label(), "zeCommandListAppendMemoryCopy", str(bytes, " bytes, upload"));
  }
  completions_.push(
      [this, index, bytes]() noexcept {
        const ze_result_t synced = zeEventHostSynchronize(events_[index], std::numeric_limits<std::uint64_t>::max());
        std::exception_ptr error;
        if (synced != ZE_RESULT_SUCCESS) {
          try {
            fail_call(synced, session_->label(), "zeEventHostSynchronize", str(bytes, " bytes, upload"));
          } catch (...) {
            error = std::current_exception();
          }
        }
        zeEventHostReset(events_[index]);
        give_back(index);  // free before done() runs: it may submit the next upload at once
        return error;
      },
      std::move(done));
}

}  // namespace lwload::level_zero
