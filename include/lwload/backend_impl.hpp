// The backend interface as an implementer sees it (ggml's ggml-backend-impl.h beside
// ggml-backend.h): the classes a backend derives from, the hooks it writes behind the entry points
// of lwload/backend.hpp, and the helpers only implementations use. lwload's own backends
// (backends/), the ggml adapter (adapters/ggml) and an application's own backend all build against
// this header; applications that only load weights need lwload/backend.hpp alone.
//
// Every hook runs after the non-virtual entry point that calls it has checked what is common to
// all backends (sizes against DeviceCaps::max_alloc, import rules, ranges), so a hook checks only
// what is its own. Hooks marked "optional" have a default; the rest must be written.
//
// Registration: BackendRegistry::add refuses a backend whose interface_version() is not this
// lwload's LWLOAD_BACKEND_INTERFACE_VERSION. BackendImpl records the version of the header the
// backend was compiled with, so a backend built against another lwload is refused by name instead
// of calling hooks that moved.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string_view>

#include "lwload/backend.hpp"
#include "lwload/export.h"

// The version of the interface below. Raised whenever a hook is added, removed or changes meaning.
#define LWLOAD_BACKEND_INTERFACE_VERSION 1

struct lwload_device;  // lwload/lwload.h
struct lwload_error;

namespace lwload {

// Device memory. Required besides the hooks: size(), native(), mechanism() (lwload/backend.hpp).
// Optional there: begin_host_write() / end_host_write() for host_visible buffers (default: none).
class LWLOAD_API DeviceBufferImpl : public DeviceBuffer {
 protected:
  DeviceBufferImpl() = default;

  // Required. read_back()'s copy, for a non-empty range inside the buffer. Bytes that are file
  // pages (imports) are copied with read_file_pages(), so a file truncated since is Error(io),
  // never a SIGBUS.
  virtual void do_read_back(std::uint64_t offset, std::span<std::byte> dst) = 0;

  // Optional (default: no views, nullptr). view() after its check: [offset, offset+size) lies
  // inside the buffer. nullptr where `offset` misses DeviceCaps::sub_buffer_alignment.
  virtual std::unique_ptr<DeviceBuffer> do_view(std::uint64_t /*offset*/, std::uint64_t /*size*/) { return nullptr; }

 private:
  friend class DeviceBuffer;  // its entry points call the hooks
};

// One opened device. Required besides the hooks: info() and finish() (lwload/backend.hpp).
class LWLOAD_API DeviceImpl : public Device {
 protected:
  DeviceImpl() = default;

  // Required. allocate() after its check: at most DeviceCaps::max_alloc bytes. Error(out_of_memory)
  // when the device refuses, Error(device) for another failure.
  virtual std::unique_ptr<DeviceBuffer> do_allocate(std::uint64_t bytes, MemoryPlace place) = 0;

  // Required. allocate_staging() after its check: at most DeviceCaps::max_alloc bytes.
  virtual std::unique_ptr<StagingBuffer> do_allocate_staging(std::uint64_t bytes) = 0;

  // Optional (default: declines every range). import_host() after its checks: only on a
  // unified-memory device with import_host_ptr, non-empty, at most max_alloc bytes, aligned to
  // import_alignment and a multiple of size_multiple. Declines (ImportResult::decline) with the
  // driver's reason when the memory cannot be imported; throws for other failures.
  virtual ImportResult do_import_host(std::span<const std::byte> /*range*/) {
    return ImportResult::decline("the device cannot import host memory");
  }

  // Required. upload() after its range checks: both ranges lie inside their buffers. A failure is
  // reported by throwing (the transfer never started) or through `done`; upload() delivers a throw
  // to `done` and never lets `done` run twice.
  virtual void do_upload(StagingBuffer& staging, std::uint64_t src_offset, DeviceBuffer& dst, std::uint64_t dst_offset,
                         std::uint64_t bytes, TransferDone done) = 0;

 private:
  friend class Device;  // its entry points call the hooks
};

// A device API. Required: name(), devices(), open() (lwload/backend.hpp); optional:
// absent_reason() (default: says nothing).
class LWLOAD_API BackendImpl : public Backend {
 protected:
  // `built_against` is the interface version this backend was compiled with; leave it defaulted.
  explicit BackendImpl(std::uint32_t built_against = LWLOAD_BACKEND_INTERFACE_VERSION) : Backend(built_against) {}
};

// The handle type of a backend's API (built-in backends register theirs this way too): a new
// NativeType, spelled `name` by native_type_name and the C API. The same name gives the same
// value, whoever registered it first; values depend on the order of registration, so compare
// handles with the value a backend's header gives (cl_mem_type()), never with a number.
// Thread-safe; Error(usage) for an empty name or past 255 types in all.
LWLOAD_API NativeType register_native_type(std::string_view name);

// A backend's C constructor (lwload_device_from_opencl, or an outside backend's own extern "C"
// function) is this: it runs `open` and hands the device opened to the C API as an lwload_device,
// or returns NULL and stores what `open` threw in *err (when err is not NULL). Never throws.
LWLOAD_API lwload_device* c_api_device(lwload_error** err,
                                       const std::function<std::unique_ptr<Device>()>& open) noexcept;

// What an adapter's or outside backend's own C entry point does with the exception it caught (call
// it inside a catch block): stores it in *err as every lwload_* function reports a failure — a new
// lwload_error with the status for its ErrorCode and its message — or nothing when err is NULL.
LWLOAD_API void c_api_store_error(lwload_error** err) noexcept;

// DeviceInfo with the overrides applied (backends call this from open()).
LWLOAD_API DeviceInfo apply_overrides(DeviceInfo info, const DeviceOverrides& overrides);

// memcpy(dst, src, n) for buffers that are imported file pages: the kernel does the reading, so a
// page lost since the mapping was made (the file was truncated) is `false`, never a SIGBUS (lwload
// installs no signal handler).
LWLOAD_API bool copy_file_pages(void* dst, const void* src, std::size_t n) noexcept;

// The guarded copy every backend's do_read_back() makes of imported file pages: copy_file_pages
// of src[0, dst.size()) into dst, or Error(io) "<where>: N bytes at offset O of imported file
// pages could not be read: the file is shorter than when it was mapped". `offset` is only named.
LWLOAD_API void read_file_pages(std::span<std::byte> dst, const std::byte* src, std::uint64_t offset,
                                std::string_view where);

}  // namespace lwload
