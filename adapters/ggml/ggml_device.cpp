// An lwload device over a ggml device: mechanism only, as every backend. The planner decides what
// each tensor gets from the facts reported here; this file only imports (buffer_from_host_ptr),
// allocates (the device's buffer type) and copies (ggml_backend_tensor_set / _get).
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <utility>

#include "lwload/backend_impl.hpp"
#include "lwload/error.hpp"
#include "lwload/ggml.hpp"

namespace lwload::ggml {
namespace {

std::uint64_t system_page() { return static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE)); }

// ggml reads and writes a buffer through tensors: one 1-D I8 tensor spanning the whole buffer,
// in a context of its own, lets set/get address any byte range of it.
class WholeBuffer {
 public:
  explicit WholeBuffer(ggml_backend_buffer_t buffer) {
    const ggml_init_params params{ggml_tensor_overhead(), nullptr, true};
    context_ = ggml_init(params);
    if (!context_) fail(ErrorCode::out_of_memory, "ggml: ggml_init failed");
    tensor_ = ggml_new_tensor_1d(context_, GGML_TYPE_I8, static_cast<std::int64_t>(ggml_backend_buffer_get_size(buffer)));
    if (ggml_backend_tensor_alloc(buffer, tensor_, ggml_backend_buffer_get_base(buffer)) != GGML_STATUS_SUCCESS) {
      ggml_free(context_);
      fail(ErrorCode::device, "ggml: cannot address the buffer of ", ggml_backend_buffer_get_size(buffer), " bytes");
    }
  }
  WholeBuffer(const WholeBuffer&) = delete;
  WholeBuffer& operator=(const WholeBuffer&) = delete;
  ~WholeBuffer() { ggml_free(context_); }
  ggml_tensor* tensor() const noexcept { return tensor_; }

 private:
  ggml_context* context_ = nullptr;
  ggml_tensor* tensor_ = nullptr;
};

class GgmlBuffer final : public DeviceBufferImpl {
 public:
  // Takes `buffer` (freed here, also when this constructor throws). `imported`: the host range it
  // uses in place (file pages), empty for allocations.
  GgmlBuffer(ggml_backend_buffer_t buffer, std::span<const std::byte> imported, std::string_view mechanism)
      : buffer_(buffer), imported_(imported), mechanism_(mechanism) {
    try {
      whole_ = std::make_unique<WholeBuffer>(buffer);
    } catch (...) {
      ggml_backend_buffer_free(buffer_);
      throw;
    }
  }
  GgmlBuffer(const GgmlBuffer&) = delete;
  GgmlBuffer& operator=(const GgmlBuffer&) = delete;
  ~GgmlBuffer() override {
    // The tensor over the buffer goes first (its context), then the buffer itself.
    whole_.reset();
    ggml_backend_buffer_free(buffer_);
  }

  std::uint64_t size() const noexcept override { return ggml_backend_buffer_get_size(buffer_); }
  NativeHandle native() const noexcept override { return {native_type(), buffer_}; }
  std::string_view mechanism() const noexcept override { return mechanism_; }
  std::span<std::byte> begin_host_write() override {
    if (!imported_.empty() || !ggml_backend_buffer_is_host(buffer_)) return {};
    return {static_cast<std::byte*>(ggml_backend_buffer_get_base(buffer_)), size()};
  }
  ggml_backend_buffer_t buffer() const noexcept { return buffer_; }

  void write(std::uint64_t offset, const std::byte* src, std::uint64_t bytes) {
    ggml_backend_tensor_set(whole_->tensor(), src, offset, bytes);
  }

  static NativeType native_type() {
    static const NativeType type = register_native_type("ggml_backend_buffer");
    return type;
  }

 protected:
  void do_read_back(std::uint64_t offset, std::span<std::byte> dst) override {
    if (!imported_.empty()) {
      // The buffer is the file's pages: the kernel reads them, so a truncated file is an error.
      read_file_pages(dst, imported_.data() + offset, offset, "ggml");
      return;
    }
    ggml_backend_tensor_get(whole_->tensor(), dst.data(), offset, dst.size());
  }

 private:
  ggml_backend_buffer_t buffer_;
  std::span<const std::byte> imported_;
  std::string_view mechanism_;
  std::unique_ptr<WholeBuffer> whole_;
};

// Page-aligned host memory (O_DIRECT reads land in it), not pinned.
class HostStaging final : public StagingBuffer {
 public:
  explicit HostStaging(std::uint64_t bytes) : size_(bytes) {
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) fail(ErrorCode::out_of_memory, "ggml: no host memory for a staging slot of ", bytes, " bytes");
    data_ = static_cast<std::byte*>(p);
  }
  HostStaging(const HostStaging&) = delete;
  HostStaging& operator=(const HostStaging&) = delete;
  ~HostStaging() override { ::munmap(data_, size_); }
  std::span<std::byte> bytes() noexcept override { return {data_, size_}; }

 private:
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

// Whether `device` implements buffer_from_host_ptr. ggml calls it without checking, so only devices
// known to have it are asked: those whose properties say so (the CPU), and ggml-vulkan, which
// implements it (VK_EXT_external_memory_host, returning no buffer when the extension or the
// alignment is missing) but reports false because llama.cpp's own loader should not choose it.
bool imports_host_memory(ggml_backend_dev_t device, const ggml_backend_dev_props& props) {
  if (props.caps.buffer_from_host_ptr) return true;
  const std::string_view registry = ggml_backend_reg_name(ggml_backend_dev_backend_reg(device));
  return registry == "Vulkan";
}

DeviceInfo describe(ggml_backend_dev_t device) {
  ggml_backend_dev_props props{};
  ggml_backend_dev_get_props(device, &props);
  ggml_backend_buffer_type_t type = ggml_backend_dev_buffer_type(device);
  DeviceInfo info;
  info.backend = "ggml";
  info.index = 0;
  for (std::size_t i = 0; i < ggml_backend_dev_count(); ++i)
    if (ggml_backend_dev_get(i) == device) info.index = static_cast<std::uint32_t>(i);
  info.name = std::string(props.name) + " (" + props.description + ")";
  switch (props.type) {
    case GGML_BACKEND_DEVICE_TYPE_CPU: info.kind = DeviceKind::cpu; break;
    case GGML_BACKEND_DEVICE_TYPE_IGPU: info.kind = DeviceKind::igpu; break;
    case GGML_BACKEND_DEVICE_TYPE_GPU: info.kind = props.device_id ? DeviceKind::dgpu : DeviceKind::igpu; break;
    default: info.kind = DeviceKind::accelerator; break;
  }
  info.memory = info.kind == DeviceKind::dgpu || info.kind == DeviceKind::accelerator ? MemoryModel::discrete
                                                                                       : MemoryModel::unified;
  DeviceCaps& caps = info.caps;
  const bool cpu = props.type == GGML_BACKEND_DEVICE_TYPE_CPU;
  caps.import_host_ptr = imports_host_memory(device, props);
  // The CPU wraps the pages as they are; a Vulkan host-pointer import pins them on GPU drivers.
  caps.import_pins = cpu ? Pinning::no : Pinning::yes;
  caps.tensor_alignment = ggml_backend_buft_get_alignment(type);
  // The CPU wraps any pointer aligned for its tensors; ggml-vulkan imports whole pages
  // (minImportedHostPointerAlignment, a page on the drivers seen) in whole pages.
  caps.import_alignment = cpu ? std::max<std::uint64_t>(caps.tensor_alignment, 64) : system_page();
  caps.size_multiple = cpu ? 1 : system_page();
  caps.max_alloc = ggml_backend_buft_get_max_size(type);
  caps.host_visible_alloc = ggml_backend_buft_is_host(type);
  caps.pinned_staging = false;
  std::size_t free = 0, total = 0;
  ggml_backend_dev_memory(device, &free, &total);
  caps.device_memory = total;
  caps.memory_available = free;
  info.details.emplace_back("ggml_device", ggml_backend_dev_name(device));
  info.details.emplace_back("buffer_type", ggml_backend_buft_name(type));
  info.details.emplace_back("zero_copy", caps.import_host_ptr ? "ggml_backend_dev_buffer_from_host_ptr" : "none");
  return info;
}

class GgmlDevice final : public DeviceImpl {
 public:
  GgmlDevice(ggml_backend_dev_t device, DeviceInfo info) : device_(device), info_(std::move(info)) {}
  const DeviceInfo& info() const noexcept override { return info_; }
  void finish() override {}  // ggml_backend_tensor_set is synchronous

 protected:
  std::unique_ptr<DeviceBuffer> do_allocate(std::uint64_t bytes, MemoryPlace place) override {
    ggml_backend_buffer_t buffer = ggml_backend_buft_alloc_buffer(ggml_backend_dev_buffer_type(device_), bytes);
    if (!buffer)
      fail(ErrorCode::out_of_memory, "ggml: device ", ggml_backend_dev_name(device_), " could not allocate ", bytes, " bytes");
    ggml_backend_buffer_set_usage(buffer, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    return std::make_unique<GgmlBuffer>(buffer, std::span<const std::byte>{},
                                        place == MemoryPlace::host_visible ? "host_visible" : "allocated");
  }

  std::unique_ptr<StagingBuffer> do_allocate_staging(std::uint64_t bytes) override {
    return std::make_unique<HostStaging>(bytes);
  }

  ImportResult do_import_host(std::span<const std::byte> range) override {
    ggml_backend_buffer_t buffer =
        ggml_backend_dev_buffer_from_host_ptr(device_, const_cast<std::byte*>(range.data()), range.size(), range.size());
    if (!buffer)
      return ImportResult::decline(str(ggml_backend_dev_name(device_), " declined buffer_from_host_ptr of ",
                                       range.size(), " bytes"));
    ggml_backend_buffer_set_usage(buffer, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    return {std::make_unique<GgmlBuffer>(buffer, range, "buffer_from_host_ptr"), {}};
  }

  void do_upload(StagingBuffer& staging, std::uint64_t src_offset, DeviceBuffer& dst, std::uint64_t dst_offset,
                 std::uint64_t bytes, TransferDone done) override {
    static_cast<GgmlBuffer&>(dst).write(dst_offset, staging.bytes().data() + src_offset, bytes);
    done(nullptr);
  }

 private:
  ggml_backend_dev_t device_;
  DeviceInfo info_;
};

}  // namespace

std::unique_ptr<Device> open_device(ggml_backend_dev_t device, const DeviceOverrides& overrides) {
  if (!device) fail(ErrorCode::usage, "ggml: no device (ggml_backend_dev_t is null: were the backends loaded?)");
  return std::make_unique<GgmlDevice>(device, apply_overrides(describe(device), overrides));
}

ggml_backend_buffer_t buffer_of(const DeviceBuffer* buffer) noexcept {
  const auto* ggml_buffer = dynamic_cast<const GgmlBuffer*>(buffer);
  return ggml_buffer ? ggml_buffer->buffer() : nullptr;
}

}  // namespace lwload::ggml
