// TEST DOUBLE — a simulated Level Zero driver for lwload's tests, never shipped with the library.
//
// The real Level Zero loader (libze_loader, 1.8) loads this library when ZE_ENABLE_ALT_DRIVERS
// names it, so the level_zero backend is exercised through the genuine loader/driver boundary.
// LWLOAD_ZE_SIM picks the device it pretends to be:
//   igpu-import  integrated GPU offering Intel's zexDriverImportExternalPointer (zero-copy)
//   igpu         integrated GPU without any import (the backend uses zeMemAllocHost: direct)
//   npu          NPU (ZE_DEVICE_TYPE_VPU, integrated) advertising ZE_extension_external_memmap_sysmem
//   dgpu         discrete GPU whose device memory is a memfd outside the process's address space
//   none         a driver with no devices
// Knobs (all optional): LWLOAD_ZE_SIM_IMPORT=zex|memmap|none overrides the mode's import,
// LWLOAD_ZE_SIM_MAX_ALLOC, LWLOAD_ZE_SIM_DEVICE_MEMORY (bytes), LWLOAD_ZE_SIM_FAIL_ALLOC_AFTER=N
// (allocation N+1 and later fail), LWLOAD_ZE_SIM_FAIL_COPY_AT=N (the Nth copy is refused at
// append), LWLOAD_ZE_SIM_LOSE_DEVICE_AT=N (the Nth copy is accepted, then the device is lost),
// LWLOAD_ZE_SIM_REFUSE_IMPORT=1 (imports fail with INVALID_ARGUMENT, as a driver refusing
// file-backed pages would; LWLOAD_ZE_SIM_REFUSE_IMPORT_WITH=unsupported_feature|unsupported_alignment|
// unsupported_size|invalid_size answers that code instead). A discrete device reports two memory
// regions (one per tile).
//
// Device pointers of the dgpu are opaque non-canonical addresses naming ranges of the memfd;
// copies use pread/pwrite, so device bytes never count in the test process's RSS.
#pragma once

#include <level_zero/ze_api.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace ze_sim {

enum class ImportKind { none, zex, memmap };

struct Config {
  std::string mode = "igpu-import";
  bool has_device = true;
  ze_device_type_t type = ZE_DEVICE_TYPE_GPU;
  bool integrated = true;
  ImportKind import = ImportKind::zex;
  std::uint64_t max_alloc = 4ull << 30;
  std::uint64_t device_memory = 16ull << 30;
  std::int64_t fail_alloc_after = -1;
  std::int64_t fail_copy_at = -1;
  std::int64_t lose_device_at = -1;
  bool refuse_import = false;
  // What a refused import answers (LWLOAD_ZE_SIM_REFUSE_IMPORT_WITH): each code a driver declines with.
  ze_result_t refusal = ZE_RESULT_ERROR_INVALID_ARGUMENT;
};

const Config& config();

// Live object counters: tests read them (lwload_ze_sim_live) to prove nothing leaked.
struct Counters {
  std::atomic<std::int64_t> contexts{0}, command_lists{0}, event_pools{0}, events{0};
  std::atomic<std::int64_t> host_allocations{0}, device_allocations{0}, imports{0};
  std::atomic<std::int64_t> allocation_calls{0}, copies{0};
  std::atomic<std::uint64_t> device_bytes_in_use{0}, device_bytes_peak{0};
};
Counters& counters();

// True once the device has been "lost" (LWLOAD_ZE_SIM_LOSE_DEVICE_AT).
std::atomic<bool>& device_lost();

// Memory (sim_memory.cpp). A copy endpoint is a host address or a device range.
ze_result_t alloc_host(const ze_host_mem_alloc_desc_t* desc, std::size_t size, std::size_t alignment, void** out);
ze_result_t alloc_device(std::size_t size, std::size_t alignment, void** out);
ze_result_t free_memory(void* ptr);
ze_result_t import_pointer(void* ptr, std::size_t size);
ze_result_t release_import(void* ptr);
ze_memory_type_t memory_type(const void* ptr);
// Performs the copy now; INVALID_ARGUMENT when a device range is out of bounds.
ze_result_t copy_bytes(void* dst, const void* src, std::size_t size);

// Entry points wired into the DDI tables (sim_tables.cpp); defined in sim_driver.cpp and sim_queue.cpp.
ze_result_t ZE_APICALL sim_zeInit(ze_init_flags_t);
ze_result_t ZE_APICALL sim_zeDriverGet(uint32_t*, ze_driver_handle_t*);
ze_result_t ZE_APICALL sim_zeDriverGetApiVersion(ze_driver_handle_t, ze_api_version_t*);
ze_result_t ZE_APICALL sim_zeDriverGetProperties(ze_driver_handle_t, ze_driver_properties_t*);
ze_result_t ZE_APICALL sim_zeDriverGetIpcProperties(ze_driver_handle_t, ze_driver_ipc_properties_t*);
ze_result_t ZE_APICALL sim_zeDriverGetExtensionProperties(ze_driver_handle_t, uint32_t*,
                                                          ze_driver_extension_properties_t*);
ze_result_t ZE_APICALL sim_zeDriverGetExtensionFunctionAddress(ze_driver_handle_t, const char*, void**);
ze_result_t ZE_APICALL sim_zeDeviceGet(ze_driver_handle_t, uint32_t*, ze_device_handle_t*);
ze_result_t ZE_APICALL sim_zeDeviceGetSubDevices(ze_device_handle_t, uint32_t*, ze_device_handle_t*);
ze_result_t ZE_APICALL sim_zeDeviceGetProperties(ze_device_handle_t, ze_device_properties_t*);
ze_result_t ZE_APICALL sim_zeDeviceGetMemoryProperties(ze_device_handle_t, uint32_t*, ze_device_memory_properties_t*);
ze_result_t ZE_APICALL sim_zeDeviceGetCommandQueueGroupProperties(ze_device_handle_t, uint32_t*,
                                                                  ze_command_queue_group_properties_t*);
ze_result_t ZE_APICALL sim_zeContextCreate(ze_driver_handle_t, const ze_context_desc_t*, ze_context_handle_t*);
ze_result_t ZE_APICALL sim_zeContextDestroy(ze_context_handle_t);
ze_result_t ZE_APICALL sim_zeCommandListCreateImmediate(ze_context_handle_t, ze_device_handle_t,
                                                        const ze_command_queue_desc_t*, ze_command_list_handle_t*);
ze_result_t ZE_APICALL sim_zeCommandListDestroy(ze_command_list_handle_t);
ze_result_t ZE_APICALL sim_zeCommandListAppendMemoryCopy(ze_command_list_handle_t, void*, const void*, size_t,
                                                         ze_event_handle_t, uint32_t, ze_event_handle_t*);
ze_result_t ZE_APICALL sim_zeEventPoolCreate(ze_context_handle_t, const ze_event_pool_desc_t*, uint32_t,
                                             ze_device_handle_t*, ze_event_pool_handle_t*);
ze_result_t ZE_APICALL sim_zeEventPoolDestroy(ze_event_pool_handle_t);
ze_result_t ZE_APICALL sim_zeEventCreate(ze_event_pool_handle_t, const ze_event_desc_t*, ze_event_handle_t*);
ze_result_t ZE_APICALL sim_zeEventDestroy(ze_event_handle_t);
ze_result_t ZE_APICALL sim_zeEventHostSignal(ze_event_handle_t);
ze_result_t ZE_APICALL sim_zeEventHostReset(ze_event_handle_t);
ze_result_t ZE_APICALL sim_zeEventHostSynchronize(ze_event_handle_t, uint64_t);
ze_result_t ZE_APICALL sim_zeEventQueryStatus(ze_event_handle_t);
ze_result_t ZE_APICALL sim_zeMemAllocHost(ze_context_handle_t, const ze_host_mem_alloc_desc_t*, size_t, size_t, void**);
ze_result_t ZE_APICALL sim_zeMemAllocDevice(ze_context_handle_t, const ze_device_mem_alloc_desc_t*, size_t, size_t,
                                            ze_device_handle_t, void**);
ze_result_t ZE_APICALL sim_zeMemFree(ze_context_handle_t, void*);
ze_result_t ZE_APICALL sim_zeMemGetAllocProperties(ze_context_handle_t, const void*, ze_memory_allocation_properties_t*,
                                                   ze_device_handle_t*);

}  // namespace ze_sim

// Handle types: the driver defines the structs behind the API's opaque handles.
struct _ze_driver_handle_t {};
struct _ze_device_handle_t {};
struct _ze_context_handle_t {};

struct _ze_event_handle_t {
  enum class State { clear, signaled, lost };
  std::mutex mutex;
  std::condition_variable changed;
  State state = State::clear;
  void set(State s) {
    {
      std::lock_guard lock(mutex);
      state = s;
    }
    changed.notify_all();
  }
};

struct _ze_event_pool_handle_t {
  std::uint32_t count = 0;
};

// An immediate command list; asynchronous ones run copies in order on their own worker thread.
struct _ze_command_list_handle_t {
  bool synchronous = false;
  std::mutex mutex;
  std::condition_variable wake;
  std::deque<std::function<void()>> jobs;
  bool stopping = false;
  std::thread worker;
};
