// Asynchronous uploads for the staged path: copies appended to an in-order immediate command list
// on the device's copy engine, each signalling an event from a fixed pool. The shared
// CompletionQueue waits on the events in submission order and runs each upload's TransferDone;
// an event goes back to the pool before its done() runs. When all events are busy, submit() waits
// (that is the backpressure on staging slots).
#pragma once

#include "backends/level_zero/layer.hpp"

#include <level_zero/ze_api.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include "backends/completion_queue.hpp"
#include "backends/level_zero/session.hpp"
#include "lwload/backend.hpp"

namespace lwload::level_zero {

class TransferQueue {
 public:
  TransferQueue(std::shared_ptr<Session> session, std::uint32_t max_in_flight);
  ~TransferQueue();  // waits for every submitted copy, then releases list, events and pool
  TransferQueue(const TransferQueue&) = delete;
  TransferQueue& operator=(const TransferQueue&) = delete;

  // Starts the copy; `done` runs once it has completed (with an error when it failed). Throws when
  // the driver refuses to append it; then `done` is not called (Device::upload delivers the error).
  void submit(void* dst, const void* src, std::size_t bytes, TransferDone done);
  void wait_idle() { completions_.wait_idle(); }

 private:
  std::uint32_t take_event();  // waits until one is free
  void give_back(std::uint32_t index);
  void release_all() noexcept;

  std::shared_ptr<Session> session_;
  ze_command_list_handle_t list_ = nullptr;
  ze_event_pool_handle_t pool_ = nullptr;
  std::vector<ze_event_handle_t> events_;

  std::mutex append_mutex_;  // immediate lists take appends from one thread at a time
  std::mutex mutex_;
  std::condition_variable freed_;
  std::vector<std::uint32_t> free_events_;
  CompletionQueue completions_;
};

}  // namespace lwload::level_zero
