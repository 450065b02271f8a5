// Asynchronous uploads for the staged path: copies appended to an in-order immediate command list
// on the device's copy engine, each signalling an event from a fixed pool. A completion thread
// waits on the events in submission order and runs each upload's TransferDone, then recycles the
// event; when all events are busy, submit() waits (that is the backpressure on staging slots).
#pragma once

#include <level_zero/ze_api.h>

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "backends/level_zero/ze_session.hpp"
#include "lwload/backend.hpp"

namespace lwload::ze {

class TransferQueue {
 public:
  TransferQueue(std::shared_ptr<Session> session, std::uint32_t max_in_flight);
  ~TransferQueue();  // waits for every submitted copy, then releases list, events and pool
  TransferQueue(const TransferQueue&) = delete;
  TransferQueue& operator=(const TransferQueue&) = delete;

  // Starts the copy; `done` runs exactly once (with an error when the driver refused or failed).
  void submit(void* dst, const void* src, std::size_t bytes, TransferDone done);
  void wait_idle();

 private:
  struct Pending {
    std::uint32_t event_index;
    TransferDone done;
    std::size_t bytes;
  };
  void complete_loop();
  void release_all() noexcept;

  std::shared_ptr<Session> session_;
  ze_command_list_handle_t list_ = nullptr;
  ze_event_pool_handle_t pool_ = nullptr;
  std::vector<ze_event_handle_t> events_;

  std::mutex append_mutex_;  // immediate lists take appends from one thread at a time
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::uint32_t> free_events_;
  std::deque<Pending> in_flight_;  // in append order, which is completion order on an in-order list
  int callbacks_running_ = 0;
  bool stopping_ = false;
  std::thread completer_;
};

}  // namespace lwload::ze
