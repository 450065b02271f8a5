// null backend: a discrete device that accepts every transfer and discards the bytes. Its buffers
// own no memory at all, so a load onto it measures the loader's own host overhead (staging ring,
// bookkeeping) and nothing else. It cannot read back, so `--verify` reports "not verifiable".
#include "backends/builtin.hpp"
#include "backends/host/synchronous_device.hpp"
#include "backends/one_device_backend.hpp"
#include "lwload/backend_impl.hpp"
#include "lwload/error.hpp"

namespace lwload {
namespace {

class NullBuffer final : public DeviceBufferImpl {
 public:
  explicit NullBuffer(std::uint64_t size) : size_(size) {}
  std::uint64_t size() const noexcept override { return size_; }
  NativeHandle native() const noexcept override { return {NativeType::none, nullptr}; }
  std::string_view mechanism() const noexcept override { return "discarded"; }
  void do_read_back(std::uint64_t, std::span<std::byte>) override {
    fail(ErrorCode::unsupported, "the null device discards uploaded bytes");
  }

 private:
  std::uint64_t size_;
};

DeviceInfo null_info() {
  return {
      .backend = "null",
      .index = 0,
      .name = "null device (discards bytes)",
      .kind = DeviceKind::accelerator,
      .memory = MemoryModel::discrete,
      .caps = {.import_host_ptr = false,
               .import_pins = Pinning::no,  // it imports nothing
               .host_visible_alloc = false,
               .pinned_staging = true},
      .details = {{"purpose", "measures the loader's own host memory and throughput"}},
  };
}

class NullDevice final : public host::SynchronousDevice {
 public:
  using SynchronousDevice::SynchronousDevice;

  std::unique_ptr<DeviceBuffer> do_allocate(std::uint64_t bytes, MemoryPlace) override {
    return std::make_unique<NullBuffer>(bytes);
  }

 protected:
  void do_upload(StagingBuffer&, std::uint64_t, DeviceBuffer&, std::uint64_t, std::uint64_t,
                 TransferDone done) override {
    done(nullptr);
  }
};

}  // namespace

std::shared_ptr<Backend> make_null_backend() {
  return std::make_shared<OneDeviceBackend>("null", null_info, [](DeviceInfo info) -> std::unique_ptr<Device> {
    return std::make_unique<NullDevice>(std::move(info));
  });
}

}  // namespace lwload
