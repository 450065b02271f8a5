// An lwload device over a ggml device: mechanism only, as every backend. The planner decides what
// each tensor gets from the facts reported here; this file only imports (buffer_from_host_ptr, when
// the device has the entry and a probe import worked), allocates (slices of shared buffers of the
// device's buffer type: ggml_arena.hpp) and copies (ggml_backend_tensor_set / _get).
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>

#include "ggml_adapter.hpp"
#include "ggml_arena.hpp"
#include "ggml_buffer.hpp"
#include "ggml_import.hpp"
#include "lwload/backend_impl.hpp"
#include "lwload/error.hpp"
#include "lwload/ggml.hpp"

namespace lwload::ggml {
namespace {

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

DeviceInfo describe(ggml_backend_dev_t device, const ImportSupport& imports) {
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
  caps.import_host_ptr = imports.imports;
  // The CPU wraps the pages as they are; a Vulkan host-pointer import pins them on GPU drivers.
  caps.import_pins = cpu ? Pinning::no : Pinning::yes;
  caps.tensor_alignment = ggml_backend_buft_get_alignment(type);
  // What the probe found accepted, for the pointer and the size alike (ggml-vulkan checks both
  // against minImportedHostPointerAlignment).
  caps.import_alignment = imports.imports ? imports.alignment : 4096;
  caps.size_multiple = imports.imports ? imports.alignment : 1;
  // One ggml buffer, allocated or imported, is at most the buffer type's max size: ggml-vulkan
  // ignores buffer_from_host_ptr's max_tensor_size, so regions are split below it by the planner.
  caps.max_alloc = ggml_backend_buft_get_max_size(type);
  caps.host_visible_alloc = ggml_backend_buft_is_host(type);
  caps.pinned_staging = false;
  std::size_t free = 0, total = 0;
  ggml_backend_dev_memory(device, &free, &total);
  caps.device_memory = total;
  caps.memory_available = free;
  info.details.emplace_back("ggml_device", ggml_backend_dev_name(device));
  info.details.emplace_back("buffer_type", ggml_backend_buft_name(type));
  info.details.emplace_back("zero_copy", imports.imports ? imports.how : "none: " + imports.how);
  return info;
}

class GgmlDevice final : public DeviceImpl {
 public:
  // Device::import_host asks do_import_host only when caps.import_host_ptr, which overrides can
  // lower but not raise: a device without the entry (ImportSupport::entry) is never asked.
  GgmlDevice(ggml_backend_dev_t device, DeviceInfo info)
      : device_(device),
        info_(std::move(info)),
        arena_(ggml_backend_dev_buffer_type(device), info_.caps.tensor_alignment, info_.caps.max_alloc) {}
  const DeviceInfo& info() const noexcept override { return info_; }
  void finish() override {}  // ggml_backend_tensor_set is synchronous
  Arena& arena() noexcept { return arena_; }

 protected:
  std::unique_ptr<DeviceBuffer> do_allocate(std::uint64_t bytes, MemoryPlace place) override {
    return arena_.allocate(bytes, place == MemoryPlace::host_visible ? "host_visible" : "allocated");
  }

  std::unique_ptr<StagingBuffer> do_allocate_staging(std::uint64_t bytes) override {
    return std::make_unique<HostStaging>(bytes);
  }

  ImportResult do_import_host(std::span<const std::byte> range) override {
    ggml_backend_buffer_t buffer = ggml_backend_dev_buffer_from_host_ptr(device_, const_cast<std::byte*>(range.data()),
                                                                         range.size(), range.size());
    if (!buffer)
      return ImportResult::decline(
          str(ggml_backend_dev_name(device_), " declined buffer_from_host_ptr of ", range.size(), " bytes"));
    ggml_backend_buffer_set_usage(buffer, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    auto shared = std::make_shared<SharedBuffer>(buffer, range);
    return {std::make_unique<Slice>(std::move(shared), 0, range.size(), "buffer_from_host_ptr"), {}};
  }

  void do_upload(StagingBuffer& staging, std::uint64_t src_offset, DeviceBuffer& dst, std::uint64_t dst_offset,
                 std::uint64_t bytes, TransferDone done) override {
    static_cast<Slice&>(dst).write(dst_offset, staging.bytes().data() + src_offset, bytes);
    done(nullptr);
  }

 private:
  ggml_backend_dev_t device_;
  DeviceInfo info_;
  Arena arena_;
};

}  // namespace

std::unique_ptr<Device> open_device(ggml_backend_dev_t device, const DeviceOverrides& overrides) {
  if (!device) fail(ErrorCode::usage, "ggml: no device (ggml_backend_dev_t is null: were the backends loaded?)");
  ggml_backend_dev_props props{};
  ggml_backend_dev_get_props(device, &props);
  ImportSupport imports = probe_import(device, props);
  DeviceInfo info = apply_overrides(describe(device, imports), overrides);
  return std::make_unique<GgmlDevice>(device, std::move(info));
}

void expect_allocations(Device& device, std::uint64_t bytes) noexcept {
  if (auto* ggml_device = dynamic_cast<GgmlDevice*>(&device)) ggml_device->arena().expect(bytes);
}

std::optional<Place> place_of(const TensorHandle& handle) noexcept {
  const auto* slice = dynamic_cast<const Slice*>(handle.buffer);
  if (!slice || handle.offset > slice->size()) return std::nullopt;
  const lwload_ggml_slice& cut = slice->place();
  return Place{cut.buffer, cut.offset + handle.offset, cut.size - handle.offset};
}

}  // namespace lwload::ggml
