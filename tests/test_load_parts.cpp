// The loader's parts on their own, without a load: the work list (what is read, in which chunks,
// coalesced how, into which queue) and the staging ring (slots handed out and returned). The whole
// loader is tested through load() in test_load.cpp; these pin the parts' contracts.
#include <doctest/doctest.h>

#include <set>

#include "io/staging_ring.hpp"
#include "load/work_list.hpp"
#include "lwload/backend.hpp"
#include "lwload/error.hpp"
#include "lwload/loader.hpp"
#include "lwload/lwload.h"
#include "support/test_support.hpp"
#include "synth/synth.hpp"

using namespace lwload;
using namespace lwload::loading;

namespace {

TensorInfo raw(std::string name, std::uint32_t file, std::uint64_t offset, std::uint64_t bytes) {
  TensorInfo t;
  t.name = std::move(name);
  t.dtype = DType::U8;
  t.shape = {static_cast<std::int64_t>(bytes)};
  t.bytes = bytes;
  t.pieces = {Piece{file, offset, bytes}};
  return t;
}

TensorPlan placed(std::size_t tensor, Placement placement) {
  TensorPlan tp;
  tp.tensor = tensor;
  tp.placement = placement;
  return tp;
}

}  // namespace

TEST_CASE("build_work: direct chunks, coalesced staged reads per file, encoded tensors in their own queue") {
  Manifest m;
  m.format = "test";
  m.files = {"a.bin", "b.bin"};
  m.tensors = {raw("direct", 0, 0, 40), raw("s1", 0, 100, 10), raw("s2", 0, 112, 10),  // 2-byte gap: joins
               raw("far", 0, 1000, 10), raw("other", 1, 0, 30), raw("zc", 0, 2000, 8)};
  TensorInfo encoded = raw("enc", 0, 3000, 5);
  encoded.encoding = Encoding::onnx_varint;
  encoded.bytes = 25;
  m.tensors.push_back(encoded);
  Plan plan;
  plan.tensors = {placed(0, Placement::direct), placed(1, Placement::staged), placed(2, Placement::staged),
                  placed(3, Placement::staged), placed(4, Placement::staged), placed(5, Placement::zero_copy),
                  placed(6, Placement::staged)};
  const auto queues = build_work(m, plan, WorkLimits{16, 24, 4, 0, 0});  // no runs
  REQUIRE(queues.size() == 3);  // two files, then the encoded queue

  const auto& a = queues[0];
  REQUIRE(a.size() == 3 + 2);  // direct 40 bytes in 16-byte chunks, then two staged reads
  for (int i = 0; i < 3; ++i) {
    CHECK_FALSE(a[i].staged);
    CHECK(a[i].entry == Entry{0});
    CHECK(a[i].offset == 16u * i);
    CHECK(a[i].dst_offset == 16u * i);
  }
  CHECK(a[2].length == 8);
  CHECK(a[3].staged);
  CHECK(a[3].offset == 100);
  CHECK(a[3].length == 22);  // s1 and s2 with the gap between them read through
  REQUIRE(a[3].segments.size() == 2);
  CHECK(a[3].segments[1].entry == Entry{2});
  CHECK(a[3].segments[1].read_offset == 12);
  CHECK(a[4].offset == 1000);  // too far to join

  REQUIRE(queues[1].size() == 2);  // 30 bytes of `other` in 24-byte staged chunks
  CHECK(queues[1][0].length == 24);
  CHECK(queues[1][1].segments.front().dst_offset == 24);

  const auto& enc = queues[2];  // 25 decoded bytes in slot-sized chunks; zero_copy gets no work
  REQUIRE(enc.size() == 2);
  CHECK(enc[0].decoded);
  CHECK(enc[0].staged);
  CHECK(enc[1].offset == 24);
  CHECK(enc[1].length == 1);
  CHECK(enc[1].segments.front().entry == Entry{6});
}

TEST_CASE("build_work: small direct tensors read in runs; a gap, a large tensor or the run's size ends a run") {
  Manifest m;
  m.format = "test";
  m.files = {"a.bin"};
  m.tensors = {raw("t0", 0, 0, 4),  raw("t1", 0, 4, 4),   raw("t2", 0, 10, 4),  // 2-byte gap: joins
               raw("t3", 0, 100, 4), raw("big", 0, 200, 64), raw("t4", 0, 264, 4), raw("t5", 0, 268, 4),
               raw("t6", 0, 272, 4)};
  Plan plan;
  for (std::size_t i = 0; i < m.tensors.size(); ++i) plan.tensors.push_back(placed(i, Placement::direct));
  // Runs of tensors under 16 bytes, at most 10 bytes long... t4 + t5 fill one, t6 starts the next.
  const auto queues = build_work(m, plan, WorkLimits{64, 64, 4, 16, 10});
  const auto& a = queues[0];
  // A run is queued when it closes: [t0 t1] (t2 would make it 14 bytes), [t2] (t3 lies 86 bytes
  // on), the big tensor's own read, [t3] (closed by t4, 160 bytes on), [t4 t5], [t6].
  REQUIRE(a.size() == 6);
  CHECK(a[0].run);
  REQUIRE(a[0].segments.size() == 2);
  CHECK(a[0].length == 8);
  CHECK(a[0].segments[1].read_offset == 4);
  CHECK(a[0].segments[1].entry == Entry{1});
  CHECK(a[1].run);
  CHECK(a[1].offset == 10);
  CHECK(a[1].segments.size() == 1);
  CHECK_FALSE(a[2].run);
  CHECK(a[2].entry == Entry{4});
  CHECK(a[3].offset == 100);
  CHECK(a[4].run);
  CHECK(a[4].segments.size() == 2);
  CHECK(a[4].length == 8);
  CHECK(a[5].segments.front().entry == Entry{7});
}

TEST_CASE("staging ring: every slot allocated up front, handed out until none is free, reused last-in first-out") {
  const auto device = open_device("host");
  io::StagingRing ring(*device, 3, 8192);
  CHECK(ring.slots() == 3);
  CHECK(ring.slot_bytes() == 8192);
  CHECK(ring.aligned_to(4096));  // anonymous mmap: page-aligned, so O_DIRECT can read into it
  std::set<std::size_t> taken;
  for (int i = 0; i < 3; ++i) {
    const auto slot = ring.acquire();
    REQUIRE(slot);
    CHECK(ring.bytes(*slot).size() == 8192);
    taken.insert(*slot);
  }
  CHECK(taken.size() == 3);
  CHECK_FALSE(ring.acquire());  // backpressure: the pipeline waits for an upload to finish
  ring.release(1);
  CHECK(ring.acquire() == std::optional<std::size_t>(1));
}

TEST_CASE("staging ring: a device that returns short staging buffers is an error") {
  class ShortStaging final : public Device {
   public:
    ShortStaging() : inner_(open_device("host")) {}
    const DeviceInfo& info() const noexcept override { return inner_->info(); }
    std::unique_ptr<DeviceBuffer> allocate_memory(std::uint64_t bytes, MemoryPlace place) override {
      return inner_->allocate(bytes, place);
    }
    std::unique_ptr<StagingBuffer> allocate_staging(std::uint64_t bytes) override {
      return inner_->allocate_staging(bytes / 2);
    }
    void finish() override {}

   protected:
    void start_upload(StagingBuffer&, std::uint64_t, DeviceBuffer&, std::uint64_t, std::uint64_t,
                      TransferDone done) override {
      done(nullptr);
    }

   private:
    std::unique_ptr<Device> inner_;
  };
  ShortStaging device;
  CHECK_THROWS_AS(io::StagingRing(device, 2, 8192), Error);
}

TEST_CASE("Device::upload checks both ranges once, for every backend, and reports every failure through done, once") {
  const auto device = open_device("host");
  auto staging = device->allocate_staging(4096);
  auto dst = device->allocate(100, MemoryPlace::device_local);
  bool done = false;
  device->upload(*staging, 0, *dst, 0, 100, [&](std::exception_ptr e) { done = !e; });
  CHECK(done);
  for (auto bad : {std::pair<std::uint64_t, std::uint64_t>{4000, 0}, {0, 1}}) {
    int calls = 0;
    std::exception_ptr error;
    device->upload(*staging, bad.first, *dst, bad.second, 100, [&](std::exception_ptr e) {
      ++calls;
      error = e;
    });
    CHECK(calls == 1);
    REQUIRE(error);
    try {
      std::rethrow_exception(error);
    } catch (const Error& e) {
      CHECK(e.code() == ErrorCode::usage);
      CHECK(std::string(e.what()).find("host:0: upload of 100 bytes") != std::string::npos);
    }
  }

  // A backend that throws from start_upload, and one that calls done and then throws: done runs
  // once either way, with the error.
  struct Throwing final : Device {
    std::unique_ptr<Device> inner = open_device("host");
    bool call_first = false;
    const DeviceInfo& info() const noexcept override { return inner->info(); }
    std::unique_ptr<DeviceBuffer> allocate_memory(std::uint64_t bytes, MemoryPlace place) override {
      return inner->allocate(bytes, place);
    }
    std::unique_ptr<StagingBuffer> allocate_staging(std::uint64_t bytes) override { return inner->allocate_staging(bytes); }
    void finish() override {}
    void start_upload(StagingBuffer&, std::uint64_t, DeviceBuffer&, std::uint64_t, std::uint64_t, TransferDone done) override {
      if (call_first) done(std::make_exception_ptr(Error(ErrorCode::device, "transfer failed")));
      fail(ErrorCode::device, "queue lost");
    }
  };
  for (const bool call_first : {false, true}) {
    Throwing throwing;
    throwing.call_first = call_first;
    auto slot = throwing.allocate_staging(4096);
    auto target = throwing.allocate(100, MemoryPlace::device_local);
    int calls = 0;
    throwing.upload(*slot, 0, *target, 0, 100, [&](std::exception_ptr e) { calls += e ? 1 : 100; });
    CHECK(calls == 1);
  }
}

namespace app_backend {

// A backend an application brings: its buffers are host memory, handed out as its own handle type.
const NativeType kAppHandle = register_native_type("app_tensor");

class AppBuffer final : public DeviceBuffer {
 public:
  explicit AppBuffer(std::unique_ptr<DeviceBuffer> inner) : inner_(std::move(inner)) {}
  std::uint64_t size() const noexcept override { return inner_->size(); }
  NativeHandle native() const noexcept override { return {kAppHandle, inner_->native().handle}; }
  std::string_view mechanism() const noexcept override { return "app"; }
  std::span<std::byte> begin_host_write() override { return inner_->begin_host_write(); }
  void end_host_write() override { inner_->end_host_write(); }

 protected:
  void copy_out(std::uint64_t offset, std::span<std::byte> dst) override { inner_->read_back(offset, dst); }

 private:
  std::unique_ptr<DeviceBuffer> inner_;
};

class AppDevice final : public Device {
 public:
  AppDevice() : info_(inner_->info()) {
    info_.backend = "app";
    info_.caps.import_host_ptr = false;  // direct: host-visible allocations of its own
  }
  const DeviceInfo& info() const noexcept override { return info_; }
  std::unique_ptr<StagingBuffer> allocate_staging(std::uint64_t bytes) override { return inner_->allocate_staging(bytes); }
  void finish() override {}

 protected:
  std::unique_ptr<DeviceBuffer> allocate_memory(std::uint64_t bytes, MemoryPlace place) override {
    return std::make_unique<AppBuffer>(inner_->allocate(bytes, place));
  }
  void start_upload(StagingBuffer&, std::uint64_t, DeviceBuffer&, std::uint64_t, std::uint64_t, TransferDone) override {
    fail(ErrorCode::unsupported, "app: direct only");
  }

 private:
  std::unique_ptr<Device> inner_ = open_device("host");
  DeviceInfo info_;
};

class AppBackend final : public Backend {
 public:
  std::string_view name() const noexcept override { return "app"; }
  std::vector<DeviceInfo> devices() override { return {AppDevice().info()}; }
  std::unique_ptr<Device> open(std::uint32_t, const DeviceOverrides&) override { return std::make_unique<AppDevice>(); }
};

}  // namespace app_backend

TEST_CASE("a backend an application registers hands out its own typed handle, through the C++ and the C API") {
  using namespace app_backend;
  CHECK(native_type_name(kAppHandle) == "app_tensor");
  CHECK(register_native_type("app_tensor") == kAppHandle);  // the same name, the same type
  CHECK(register_native_type("cl_mem") == NativeType::cl_mem);
  CHECK(test::error_of([] { (void)register_native_type(""); }).code() == ErrorCode::usage);
  BackendRegistry::instance().add(std::make_shared<AppBackend>());

  test::TempDir dir;
  synth::SynthSpec spec;
  spec.total_bytes = 64 << 10;
  spec.tensor_count = 4;
  const auto path = dir / "m.safetensors";
  synth::write_model(path, spec);
  const auto device = open_device("app");
  const Weights w = load(open_manifest(path), *device);
  for (const TensorHandle& h : w.tensors()) CHECK(native_type_name(h.native.type) == "app_tensor");
  CHECK(verify(w).tensors == 4);

  lwload_error* err = nullptr;
  lwload_manifest* m = lwload_manifest_open(path.c_str(), &err);
  lwload_device* d = lwload_device_open("app", &err);
  REQUIRE((m && d && !err));
  lwload_weights* cw = lwload_load(m, d, nullptr, &err);
  REQUIRE(cw);
  lwload_tensor_handle t{};
  t.struct_size = sizeof t;
  REQUIRE(lwload_weights_find(cw, w.tensors()[0].info->name.c_str(), &t, &err) == LWLOAD_OK);
  CHECK(std::string(t.native_type) == "app_tensor");
  lwload_weights_free(cw);
  lwload_device_free(d);
  lwload_manifest_free(m);
}
