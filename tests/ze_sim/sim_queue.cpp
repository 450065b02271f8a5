// TEST DOUBLE (see sim.hpp): immediate command lists, events and the memory entry points of the
// simulated driver. Asynchronous lists run their copies in order on a worker thread and signal the
// copy's event afterwards, so callers really wait for completion as they would on hardware.
#include <chrono>
#include <vector>

#include "sim.hpp"

namespace ze_sim {
namespace {

void worker_loop(ze_command_list_handle_t list) {
  std::unique_lock lock(list->mutex);
  for (;;) {
    list->wake.wait(lock, [&] { return list->stopping || !list->jobs.empty(); });
    if (list->jobs.empty()) return;  // stopping and drained
    auto job = std::move(list->jobs.front());
    list->jobs.pop_front();
    lock.unlock();
    job();
    lock.lock();
  }
}

}  // namespace

ze_result_t ZE_APICALL sim_zeCommandListCreateImmediate(ze_context_handle_t, ze_device_handle_t,
                                                        const ze_command_queue_desc_t* desc,
                                                        ze_command_list_handle_t* out) {
  if (desc == nullptr || out == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (desc->ordinal > 1) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  auto* list = new _ze_command_list_handle_t;
  list->synchronous = desc->mode == ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS;
  if (!list->synchronous) list->worker = std::thread(worker_loop, list);
  ++counters().command_lists;
  *out = list;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL sim_zeCommandListDestroy(ze_command_list_handle_t list) {
  if (list == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  {
    std::lock_guard lock(list->mutex);
    list->stopping = true;
  }
  list->wake.notify_all();
  if (list->worker.joinable()) list->worker.join();
  delete list;
  --counters().command_lists;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL sim_zeCommandListAppendMemoryCopy(ze_command_list_handle_t list, void* dst, const void* src,
                                                         size_t size, ze_event_handle_t signal, uint32_t wait_count,
                                                         ze_event_handle_t* waits) {
  if (list == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (dst == nullptr || src == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (wait_count != 0 && waits == nullptr) return ZE_RESULT_ERROR_INVALID_SIZE;
  if (device_lost()) return ZE_RESULT_ERROR_DEVICE_LOST;
  const std::int64_t n = ++counters().copies;
  if (n == config().fail_copy_at) return ZE_RESULT_ERROR_DEVICE_LOST;
  const bool lose = n == config().lose_device_at;
  const std::vector<ze_event_handle_t> wait_list(waits, waits + wait_count);  // the caller's array may go
  auto job = [=] {
    for (ze_event_handle_t wait : wait_list) {
      std::unique_lock lock(wait->mutex);
      wait->changed.wait(lock, [&] { return wait->state != _ze_event_handle_t::State::clear; });
    }
    ze_result_t result = ZE_RESULT_ERROR_DEVICE_LOST;
    if (lose) {
      device_lost() = true;
    } else {
      result = copy_bytes(dst, src, size);
    }
    if (signal != nullptr)
      signal->set(result == ZE_RESULT_SUCCESS ? _ze_event_handle_t::State::signaled : _ze_event_handle_t::State::lost);
    return result;
  };
  if (list->synchronous) return job();
  {
    std::lock_guard lock(list->mutex);
    list->jobs.emplace_back([job] { job(); });
  }
  list->wake.notify_one();
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL sim_zeEventPoolCreate(ze_context_handle_t, const ze_event_pool_desc_t* desc, uint32_t,
                                             ze_device_handle_t*, ze_event_pool_handle_t* out) {
  if (desc == nullptr || out == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (desc->count == 0) return ZE_RESULT_ERROR_INVALID_SIZE;
  auto* pool = new _ze_event_pool_handle_t;
  pool->count = desc->count;
  ++counters().event_pools;
  *out = pool;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL sim_zeEventPoolDestroy(ze_event_pool_handle_t pool) {
  if (pool == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  delete pool;
  --counters().event_pools;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL sim_zeEventCreate(ze_event_pool_handle_t pool, const ze_event_desc_t* desc,
                                         ze_event_handle_t* out) {
  if (pool == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (desc == nullptr || out == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (desc->index >= pool->count) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  *out = new _ze_event_handle_t;
  ++counters().events;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL sim_zeEventDestroy(ze_event_handle_t event) {
  if (event == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  delete event;
  --counters().events;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL sim_zeEventHostSignal(ze_event_handle_t event) {
  event->set(_ze_event_handle_t::State::signaled);
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL sim_zeEventHostReset(ze_event_handle_t event) {
  event->set(_ze_event_handle_t::State::clear);
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL sim_zeEventHostSynchronize(ze_event_handle_t event, uint64_t timeout_ns) {
  using State = _ze_event_handle_t::State;
  std::unique_lock lock(event->mutex);
  const auto ready = [&] { return event->state != State::clear; };
  if (timeout_ns == UINT64_MAX) {
    event->changed.wait(lock, ready);
  } else if (!event->changed.wait_for(lock, std::chrono::nanoseconds(timeout_ns), ready)) {
    return ZE_RESULT_NOT_READY;
  }
  return event->state == State::signaled ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_DEVICE_LOST;
}

ze_result_t ZE_APICALL sim_zeEventQueryStatus(ze_event_handle_t event) { return sim_zeEventHostSynchronize(event, 0); }

ze_result_t ZE_APICALL sim_zeMemAllocHost(ze_context_handle_t, const ze_host_mem_alloc_desc_t* desc, size_t size,
                                          size_t alignment, void** out) {
  return alloc_host(desc, size, alignment, out);
}

ze_result_t ZE_APICALL sim_zeMemAllocDevice(ze_context_handle_t, const ze_device_mem_alloc_desc_t*, size_t size,
                                            size_t alignment, ze_device_handle_t, void** out) {
  return alloc_device(size, alignment, out);
}

ze_result_t ZE_APICALL sim_zeMemFree(ze_context_handle_t, void* ptr) { return free_memory(ptr); }

ze_result_t ZE_APICALL sim_zeMemGetAllocProperties(ze_context_handle_t, const void* ptr,
                                                   ze_memory_allocation_properties_t* props, ze_device_handle_t* dev) {
  if (props == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  props->type = memory_type(ptr);
  props->id = 0;
  props->pageSize = 4096;
  if (dev != nullptr) *dev = nullptr;
  return ZE_RESULT_SUCCESS;
}

}  // namespace ze_sim
