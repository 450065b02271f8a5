// host backend: the CPU as a unified-memory device. Zero-copy is the mapped file itself (a buffer
// aliasing the read-only mapped pages), allocations are anonymous page-aligned memory the host
// writes directly, and an upload is a memcpy that completes before upload() returns.
#include <cstring>
#include <memory>
#include <mutex>
#include <utility>
#include <fstream>
#include <string>

#include "backends/builtin.hpp"
#include "core/align.hpp"
#include "backends/host/memory.hpp"
#include "backends/host/capacity.hpp"
#include "backends/host/synchronous_device.hpp"
#include "backends/one_device_backend.hpp"
#include "lwload/backend_impl.hpp"
#include "lwload/error.hpp"

namespace lwload {
namespace {

// Memory the CPU addresses: either owned (allocated) or borrowed (imported mapped pages).
class HostBuffer final : public DeviceBufferImpl {
 public:
  HostBuffer(host::AnonymousMemory memory, std::string_view mechanism)
      : memory_(std::move(memory)),
        data_(memory_.bytes().data()),
        size_(memory_.bytes().size()),
        mechanism_(mechanism),
        writable_(true) {}
  // A part of a shared slab (small allocations), which it keeps alive.
  HostBuffer(std::shared_ptr<const host::AnonymousMemory> slab, std::span<std::byte> part, std::string_view mechanism)
      : slab_(std::move(slab)), data_(part.data()), size_(part.size()), mechanism_(mechanism), writable_(true) {}
  explicit HostBuffer(std::span<const std::byte> imported)
      : data_(const_cast<std::byte*>(imported.data())),
        size_(imported.size()),
        mechanism_("mapped_file"),
        writable_(false) {}

  std::uint64_t size() const noexcept override { return size_; }
  NativeHandle native() const noexcept override { return {NativeType::host_ptr, data_}; }
  std::string_view mechanism() const noexcept override { return mechanism_; }
  std::span<std::byte> begin_host_write() override {
    if (!writable_) return {};
    // The loader calls this when it issues a tensor's first read, while earlier reads are still
    // in flight on the reader's threads, so populating here overlaps with them.
    // A slab part smaller than a page is not worth a syscall: its page faults in once, on the
    // copy (a madvise per one-element tensor cost a million syscalls for a million of them).
    if (!slab_) memory_.prefault();
    else if (size_ >= page_size()) host::AnonymousMemory::prefault({data_, size_});
    return {data_, size_};
  }
  void do_read_back(std::uint64_t offset, std::span<std::byte> dst) override {
    if (writable_) {
      std::memcpy(dst.data(), data_ + offset, dst.size());
      return;
    }
    // Imported file pages: a file truncated since it was mapped must not kill the process.
    read_file_pages(dst, data_ + offset, offset, "host");
  }

  void write(std::uint64_t offset, std::span<const std::byte> src) {
    if (!writable_) fail(ErrorCode::device, "host: upload into a read-only imported buffer");
    if (!src.empty()) std::memcpy(data_ + offset, src.data(), src.size());
  }

 private:
  host::AnonymousMemory memory_;
  std::shared_ptr<const host::AnonymousMemory> slab_;
  std::byte* data_;
  std::size_t size_;
  std::string_view mechanism_;
  bool writable_;
};

// Small allocations are carved out of shared slabs: an mmap each would round every tensor up to
// whole pages, and models with thousands of small tensors (a 10,000-tensor GGUF of 64 MiB: 6.7 KiB
// each) would pay ~1.5 KiB per tensor for it. Pages of a slab become resident only as its buffers
// are written; a slab is unmapped when its last buffer goes (the device keeps only a weak_ptr).
class SlabAllocator {
 public:
  static constexpr std::uint64_t kMaxSmall = 64 * 1024;
  static constexpr std::uint64_t kSlabBytes = 2 * 1024 * 1024;
  static constexpr std::uint64_t kAlignment = 64;  // a cache line: enough for any vector load

  // A part of a slab for `bytes` (≤ kMaxSmall), and the slab it lives in.
  std::pair<std::shared_ptr<const host::AnonymousMemory>, std::span<std::byte>> allocate(std::uint64_t bytes) {
    std::lock_guard lock(mutex_);
    std::shared_ptr<host::AnonymousMemory> slab = current_.lock();
    if (!slab || used_ + bytes > kSlabBytes) {
      slab = std::make_shared<host::AnonymousMemory>(kSlabBytes);
      current_ = slab;
      used_ = 0;
    }
    const std::span<std::byte> part =
        slab->bytes().subspan(static_cast<std::size_t>(used_), static_cast<std::size_t>(bytes));
    used_ = (used_ + bytes + kAlignment - 1) / kAlignment * kAlignment;
    return {std::move(slab), part};
  }

 private:
  std::mutex mutex_;
  std::weak_ptr<host::AnonymousMemory> current_;
  std::uint64_t used_ = 0;
};

std::string cpu_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  return "CPU";
}

DeviceInfo host_info() {
  DeviceInfo info;
  info.backend = "host";
  info.index = 0;
  info.name = cpu_name();
  info.kind = DeviceKind::cpu;
  info.memory = MemoryModel::unified;
  info.caps.import_host_ptr = true;
  info.caps.import_alignment = 1;  // the "import" is the mapping itself: any byte will do
  info.caps.size_multiple = 1;
  info.caps.host_visible_alloc = true;
  info.caps.pinned_staging = false;
  info.caps.import_pins = Pinning::no;  // the mapped file itself: the kernel may evict and fault it back
  // The host's "device memory" is the process's: what it can still have now, so a plan of more
  // direct or staged bytes than that is refused before the first allocation.
  const host::HostCapacity capacity = host::host_capacity();
  info.caps.device_memory = info.caps.memory_available = capacity.bytes;
  if (capacity.bytes != 0) info.details.emplace_back("memory", "available now, bounded by " + capacity.bound_by);
  info.details.emplace_back("zero_copy", "the mapped file itself (read-only pages)");
  info.details.emplace_back("upload", "memcpy, synchronous");
  return info;
}

class HostDevice final : public host::SynchronousDevice {
 public:
  using SynchronousDevice::SynchronousDevice;

  std::unique_ptr<DeviceBuffer> do_allocate(std::uint64_t bytes, MemoryPlace place) override {
    const std::string_view mechanism = place == MemoryPlace::host_visible ? "host_visible" : "allocated";
    if (bytes > 0 && bytes <= SlabAllocator::kMaxSmall) {
      auto [slab, part] = slabs_.allocate(bytes);
      return std::make_unique<HostBuffer>(std::move(slab), part, mechanism);
    }
    return std::make_unique<HostBuffer>(host::AnonymousMemory(bytes), mechanism);
  }

  ImportResult do_import_host(std::span<const std::byte> range) override {
    return {std::make_unique<HostBuffer>(range), {}};
  }

 protected:
  void do_upload(StagingBuffer& staging, std::uint64_t src_offset, DeviceBuffer& dst, std::uint64_t dst_offset,
                 std::uint64_t bytes, TransferDone done) override {
    auto* target = dynamic_cast<HostBuffer*>(&dst);
    if (!target) fail(ErrorCode::usage, "host: upload into a buffer of another device");
    target->write(dst_offset, staging.bytes().subspan(src_offset, bytes));
    done(nullptr);
  }

 private:
  SlabAllocator slabs_;
};

}  // namespace

std::shared_ptr<Backend> make_host_backend() {
  return std::make_shared<OneDeviceBackend>("host", host_info, [](DeviceInfo info) -> std::unique_ptr<Device> {
    return std::make_unique<HostDevice>(std::move(info));
  });
}

}  // namespace lwload
