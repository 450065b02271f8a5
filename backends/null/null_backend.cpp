// null backend: a discrete device that accepts every transfer and discards the bytes. Its buffers
// own no memory at all, so a load onto it measures the loader's own host overhead (staging ring,
// bookkeeping) and nothing else. It cannot read back, so `--verify` reports "not verifiable".
#include "backends/builtin.hpp"
#include "backends/host/host_memory.hpp"
#include "lwload/error.hpp"

namespace lwload {
namespace {

class NullBuffer final : public DeviceBuffer {
 public:
  explicit NullBuffer(std::uint64_t size) : size_(size) {}
  std::uint64_t size() const noexcept override { return size_; }
  NativeHandle native() const noexcept override { return {NativeType::none, nullptr}; }
  std::string_view mechanism() const noexcept override { return "discarded"; }
  void copy_out(std::uint64_t, std::span<std::byte>) override {
    fail(ErrorCode::unsupported, "the null device discards uploaded bytes");
  }

 private:
  std::uint64_t size_;
};

class NullStaging final : public StagingBuffer {
 public:
  explicit NullStaging(std::uint64_t bytes) : memory_(bytes) {}
  std::span<std::byte> bytes() noexcept override { return memory_.bytes(); }

 private:
  host::AnonymousMemory memory_;
};

DeviceInfo null_info() {
  DeviceInfo info;
  info.backend = "null";
  info.index = 0;
  info.name = "null device (discards bytes)";
  info.kind = DeviceKind::accelerator;
  info.memory = MemoryModel::discrete;
  info.caps.import_host_ptr = false;
  info.caps.host_visible_alloc = false;
  info.caps.pinned_staging = true;
  info.details.emplace_back("purpose", "measures the loader's own host memory and throughput");
  return info;
}

class NullDevice final : public Device {
 public:
  explicit NullDevice(DeviceInfo info) : info_(std::move(info)) {}
  const DeviceInfo& info() const noexcept override { return info_; }

  std::unique_ptr<DeviceBuffer> allocate_memory(std::uint64_t bytes, MemoryPlace) override {
    return std::make_unique<NullBuffer>(bytes);
  }

  std::unique_ptr<StagingBuffer> allocate_staging(std::uint64_t bytes) override {
    return std::make_unique<NullStaging>(bytes);
  }

  void finish() override {}

 protected:
  void start_upload(StagingBuffer&, std::uint64_t, DeviceBuffer&, std::uint64_t, std::uint64_t,
                    TransferDone done) override {
    done(nullptr);
  }

 private:
  DeviceInfo info_;
};

class NullBackend final : public Backend {
 public:
  std::string_view name() const noexcept override { return "null"; }
  std::vector<DeviceInfo> devices() override { return {null_info()}; }
  std::unique_ptr<Device> open(std::uint32_t index, const DeviceOverrides& overrides) override {
    if (index != 0) fail(ErrorCode::usage, "null has one device (null:0)");
    return std::make_unique<NullDevice>(apply_overrides(null_info(), overrides));
  }
};

}  // namespace

std::shared_ptr<Backend> make_null_backend() { return std::make_shared<NullBackend>(); }

}  // namespace lwload
