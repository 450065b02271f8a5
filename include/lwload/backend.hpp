// The backend interface as its users see it: the devices, buffers and entry points the loader and
// applications call. What a backend implementer writes — the do_* hooks behind these entry points,
// and the helpers only implementations use — is in lwload/backend_impl.hpp (ggml's split of
// ggml-backend.h and ggml-backend-impl.h). Backends only allocate, import and transfer; which of
// those a tensor gets is the planner's call. Applications may register their own backend (the
// role ONNX Runtime gives external data loaders).
//
// Threading: a Device is driven by one loader at a time. TransferDone callbacks may run on any
// thread (a driver's callback thread, or synchronously inside upload()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lwload/device.hpp"
#include "lwload/export.h"

namespace lwload {

// What a NativeHandle's `handle` is. Two kinds belong to no device API; every other value is one a
// backend registered for its API's handle (register_native_type, lwload/backend_impl.hpp), built-in
// backends the same way as an application's own: their typed headers name them (cl_mem_type() in
// lwload/opencl.hpp, ze_ptr_type(), vk_buffer_type(), cu_deviceptr_type()). The C API spells every
// value with native_type_name().
enum class NativeType : std::uint8_t {
  none,      // no handle: the null device, or a skipped tensor
  host_ptr,  // a void* to the bytes in host memory
};
LWLOAD_API std::string_view native_type_name(NativeType type) noexcept;  // "none", "host_ptr", "cl_mem", ...

// A backend's own handle for a buffer.
struct NativeHandle {
  NativeType type = NativeType::none;
  void* handle = nullptr;
};

enum class MemoryPlace {
  device_local,  // fastest for the device; filled through staging uploads
  host_visible,  // the host writes it directly (direct placement on unified memory)
};

// Pinned host memory the loader reads file bytes into before upload() copies them to a
// DeviceBuffer: the first stop of a staged tensor's bytes on their way to the device.
class LWLOAD_API StagingBuffer {
 public:
  virtual ~StagingBuffer() = default;
  virtual std::span<std::byte> bytes() noexcept = 0;
};

class DeviceBufferImpl;  // lwload/backend_impl.hpp
class DeviceImpl;
class BackendImpl;

// Device memory lwload allocated or imported. Destroying it releases the memory (or the import).
// Implemented by deriving from DeviceBufferImpl (lwload/backend_impl.hpp), never from this.
class LWLOAD_API DeviceBuffer {
 public:
  virtual ~DeviceBuffer() = default;
  virtual std::uint64_t size() const noexcept = 0;
  virtual NativeHandle native() const noexcept = 0;
  // How the memory came to be, recorded per region by `lwload plan/load`: "allocated",
  // "host_visible", "mapped_file", "use_host_ptr", "arm_import", "svm", "ze_import", ...
  virtual std::string_view mechanism() const noexcept = 0;
  // host_visible buffers: the bytes the loader reads the file into, valid until end_host_write();
  // empty for every other kind.
  virtual std::span<std::byte> begin_host_write() { return {}; }
  virtual void end_host_write() {}
  // Copies bytes [offset, offset + dst.size()) back to the host (lwload load --verify). Blocking.
  // Error(usage) naming offset, size and buffer size for a range outside the buffer, checked here
  // once for every backend.
  void read_back(std::uint64_t offset, std::span<std::byte> dst);
  // A buffer addressing [offset, offset+size) of this one (an OpenCL sub-buffer), or nullptr when
  // the backend has no such views or `offset` misses DeviceCaps::sub_buffer_alignment. The view
  // must not outlive this buffer. Error(usage) for a range outside the buffer, checked here once
  // for every backend, the same as read_back().
  std::unique_ptr<DeviceBuffer> view(std::uint64_t offset, std::uint64_t size);

 private:
  friend class DeviceBufferImpl;  // the only class that derives from this one
  DeviceBuffer() = default;
};

// Called once when an upload has finished reading its staging bytes; non-null on failure.
using TransferDone = std::function<void(std::exception_ptr error)>;

// What import_host() made of a range: the buffer, or the device's reason for declining it (the
// planner re-plans a declined region with that reason; nothing is thrown for a refusal).
struct ImportResult {
  std::unique_ptr<DeviceBuffer> buffer;  // nullptr: declined
  std::string declined;                  // why, when declined ("USE_HOST_PTR maps to a copy", ...)

  static ImportResult decline(std::string why) { return {nullptr, std::move(why)}; }
};

// One opened device. Implemented by deriving from DeviceImpl (lwload/backend_impl.hpp).
class LWLOAD_API Device {
 public:
  virtual ~Device() = default;
  virtual const DeviceInfo& info() const noexcept = 0;

  // Throws Error(out_of_memory) naming the device and the size when `bytes` exceeds
  // DeviceCaps::max_alloc (checked here, once for every backend) or the device refuses,
  // Error(device) otherwise.
  std::unique_ptr<DeviceBuffer> allocate(std::uint64_t bytes, MemoryPlace place);

  // Zero-copy: lets the device use `range` (read-only mapped file pages; the caller keeps them
  // mapped for the buffer's whole life) in place. A device that declines or could only copy says
  // why in the result; errors other than "this memory cannot be imported" throw. Checked here,
  // once for every backend, before it runs: an empty range is Error(usage), one larger than
  // DeviceCaps::max_alloc Error(out_of_memory), and one that misses import_alignment or
  // size_multiple is declined with the reason.
  ImportResult import_host(std::span<const std::byte> range);

  // A staging slot (host memory the device copies from at full speed). Throws like allocate(),
  // max_alloc checked here.
  std::unique_ptr<StagingBuffer> allocate_staging(std::uint64_t bytes);

  // Starts copying staging.bytes()[src_offset, +bytes) to dst at dst_offset. `done` runs exactly
  // once: when the staging bytes may be reused, or with the error. Every failure goes there — a
  // range outside either buffer (Error(usage), checked here once for every backend, before the
  // backend runs), a backend that throws, a transfer that fails — so upload() itself never throws
  // and a caller has one path to handle. Several uploads may be in flight.
  void upload(StagingBuffer& staging, std::uint64_t src_offset, DeviceBuffer& dst, std::uint64_t dst_offset,
              std::uint64_t bytes, TransferDone done) noexcept;

  // Blocks until every upload started so far has completed.
  virtual void finish() = 0;

 private:
  friend class DeviceImpl;  // the only class that derives from this one
  Device() = default;
};

// Implemented by deriving from BackendImpl (lwload/backend_impl.hpp), which records the backend
// interface version the backend was built against; BackendRegistry::add checks it.
class LWLOAD_API Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const noexcept = 0;
  // The devices present; empty (not an error) when the runtime or driver is absent.
  virtual std::vector<DeviceInfo> devices() = 0;
  // Why devices() is empty ("no NVIDIA driver: libcuda.so.1: cannot open ..."); "" when it is not,
  // or when the backend does not say.
  virtual std::string absent_reason() const { return {}; }
  virtual std::unique_ptr<Device> open(std::uint32_t index, const DeviceOverrides& overrides) = 0;
  // LWLOAD_BACKEND_INTERFACE_VERSION of the lwload/backend_impl.hpp this backend was built against.
  std::uint32_t interface_version() const noexcept { return interface_version_; }

 private:
  friend class BackendImpl;  // the only class that derives from this one
  explicit Backend(std::uint32_t interface_version) : interface_version_(interface_version) {}
  std::uint32_t interface_version_;
};

// The one singleton: the built-in backends (each backend this build has, one row each in
// backends/meson.build) are registered on first use; applications add their own.
class LWLOAD_API BackendRegistry {
 public:
  // Defined beside the built-in backends (backends/builtin.cpp), which it starts with, so the core
  // library never includes a backend.
  static BackendRegistry& instance();
  // Replaces a backend of the same name. Error(usage) for a backend built against another
  // LWLOAD_BACKEND_INTERFACE_VERSION than this lwload's.
  void add(std::shared_ptr<Backend> backend);
  std::shared_ptr<Backend> find(std::string_view name) const;
  std::vector<std::shared_ptr<Backend>> backends() const;

 private:
  explicit BackendRegistry(std::vector<std::shared_ptr<Backend>> builtin);
  mutable std::mutex mutex_;
  std::vector<std::shared_ptr<Backend>> backends_;
};

// Every device of every registered backend.
LWLOAD_API std::vector<DeviceInfo> list_devices();

// Opens "BACKEND[:INDEX]" or "auto" (the best device present: a unified-memory GPU/NPU that can
// import, then any GPU/NPU, then host). Throws Error(usage) for an unknown backend or index.
LWLOAD_API std::unique_ptr<Device> open_device(std::string_view spec, const DeviceOverrides& overrides = {});

}  // namespace lwload
