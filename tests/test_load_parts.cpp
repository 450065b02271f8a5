// The loader's parts on their own, without a load: the plan's read schedule (what is read, in which
// chunks, coalesced how, into which queue) and the staging ring (slots handed out and returned). The whole
// loader is tested through load() in test_load.cpp; these pin the parts' contracts.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <limits>
#include <set>
#include <string>
#include <system_error>
#include <utility>

#include "core/align.hpp"
#include "io/page_cache.hpp"
#include "io/staging_ring.hpp"
#include "lwload/backend_impl.hpp"
#include "lwload/cuda.hpp"
#include "lwload/error.hpp"
#include "lwload/loader.hpp"
#include "lwload/lwload.h"
#include "plan/schedule.hpp"
#include "support/test_support.hpp"
#include "support/faulty_device.hpp"
#include "support/range_checks.hpp"
#include "io/sources.hpp"
#include "lwload/memory_file_system.hpp"
#include "synth/synth.hpp"

using namespace lwload;

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

TensorPlan placed(Placement placement) {
  TensorPlan tp;
  tp.placement = placement;
  return tp;
}

}  // namespace

TEST_CASE("schedule: direct chunks, coalesced staged reads per file, decoded tensors in their own queue") {
  constexpr std::uint64_t MiB = 1 << 20;
  Manifest m;
  m.format = "test";
  m.files = {"a.bin", "b.bin"};
  m.tensors = {raw("direct", 0, 0, 40 * MiB),
               raw("s1", 0, 50 * MiB, 10000),
               raw("s2", 0, 50 * MiB + 10002, 10000),  // a 2-byte gap: read through
               raw("far", 0, 50 * MiB + 200000, 10000),
               raw("other", 1, 0, 30000),
               raw("zc", 0, 60 * MiB, 8)};
  TensorInfo encoded = raw("enc", 0, 61 * MiB, 5);
  encoded.encoding = Encoding::onnx_varint;
  encoded.bytes = 30000;
  m.tensors.push_back(encoded);
  Plan plan;
  plan.tensors = {placed(Placement::direct), placed(Placement::staged), placed(Placement::staged),
                  placed(Placement::staged), placed(Placement::staged), placed(Placement::zero_copy),
                  placed(Placement::staged)};
  plan.staging_slots = 2;
  plan.slot_bytes = 24576;  // six pages: staged reads are at most this long
  plan::schedule(m, plan);
  CHECK_FALSE(plan.direct_io);  // the page cache is unknown for a manifest without open files
  const auto& queues = plan.schedule.queues;
  REQUIRE(queues.size() == 3);  // two files, then the decoded queue

  const auto& a = queues[0];
  REQUIRE(a.size() == 3 + 2);  // direct 40 MiB in 16 MiB reads, then two staged reads
  for (std::uint64_t i = 0; i < 3; ++i) {
    CHECK(a[i].kind == Read::Kind::direct);
    REQUIRE(a[i].segments.size() == 1);
    CHECK(a[i].segments[0].tensor == 0);
    CHECK(a[i].offset == 16 * MiB * i);
    CHECK(a[i].segments[0].dst_offset == 16 * MiB * i);
  }
  CHECK(a[2].length == 8 * MiB);
  CHECK(a[3].kind == Read::Kind::staged);
  CHECK(a[3].offset == 50 * MiB);
  CHECK(a[3].length == 20002);  // s1 and s2 with the gap between them
  REQUIRE(a[3].segments.size() == 2);
  CHECK(a[3].segments[1].tensor == 2);
  CHECK(a[3].segments[1].read_offset == 10002);
  CHECK(a[4].offset == 50 * MiB + 200000);  // more than 64 KiB on: its own read

  REQUIRE(queues[1].size() == 2);  // 30000 bytes of `other` in slot-sized reads
  CHECK(queues[1][0].length == 24576);
  CHECK(queues[1][1].segments.front().dst_offset == 24576);

  const auto& enc = queues[2];  // 30000 decoded bytes in slot-sized chunks; zero_copy gets no read
  REQUIRE(enc.size() == 2);
  CHECK(enc[0].decoded);
  CHECK(enc[0].kind == Read::Kind::staged);
  CHECK(enc[1].offset == 24576);
  CHECK(enc[1].length == 30000 - 24576);
  CHECK(enc[1].segments.front().tensor == 6);
  CHECK(plan.schedule.reads() == 9);
}

TEST_CASE(
    "schedule: small direct tensors read in runs; a gap or the run's size ends a run, a large tensor reads alone") {
  Manifest m;
  m.format = "test";
  m.files = {"a.bin"};
  for (std::uint64_t i = 0; i < 20; ++i) m.tensors.push_back(raw("s" + std::to_string(i), 0, 60000 * i, 60000));
  m.tensors.push_back(raw("g", 0, 1270000, 60000));     // 70000 bytes past s19: a new run
  m.tensors.push_back(raw("big", 0, 1400000, 100000));  // not small (64 KiB or more): a read of its own
  m.tensors.push_back(raw("h", 0, 1500000, 60000));     // 170000 bytes past g: a new run
  Plan plan;
  plan.tensors.assign(m.tensors.size(), placed(Placement::direct));
  plan::schedule(m, plan);
  const auto& a = plan.schedule.queues[0];
  // A run is queued when it closes: s0..s16 (1 020 000 bytes; s17 would pass 1 MiB), s17..s19
  // (closed by g's gap), big's own read (queued while g's run is open), [g] (closed by h), [h].
  REQUIRE(a.size() == 5);
  CHECK(a[0].kind == Read::Kind::run);
  CHECK(a[0].segments.size() == 17);
  CHECK(a[0].length == 1020000);
  CHECK(a[0].segments[16].read_offset == 960000);
  CHECK(a[1].kind == Read::Kind::run);
  CHECK(a[1].offset == 1020000);
  CHECK(a[1].segments.size() == 3);
  CHECK(a[2].kind == Read::Kind::direct);
  CHECK(a[2].segments.front().tensor == 21);
  CHECK(a[3].offset == 1270000);
  CHECK(a[3].segments.size() == 1);
  CHECK(a[4].kind == Read::Kind::run);
  CHECK(a[4].segments.front().tensor == 22);
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
  class ShortStaging final : public DeviceImpl {
   public:
    ShortStaging() : inner_(open_device("host")) {}
    const DeviceInfo& info() const noexcept override { return inner_->info(); }
    std::unique_ptr<DeviceBuffer> do_allocate(std::uint64_t bytes, MemoryPlace place) override {
      return inner_->allocate(bytes, place);
    }
    std::unique_ptr<StagingBuffer> do_allocate_staging(std::uint64_t bytes) override {
      return inner_->allocate_staging(bytes / 2);
    }
    void finish() override {}

   protected:
    void do_upload(StagingBuffer&, std::uint64_t, DeviceBuffer&, std::uint64_t, std::uint64_t,
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

  // A backend that throws from do_upload, and one that calls done and then throws: done runs
  // once either way, with the error.
  struct Throwing final : DeviceImpl {
    std::unique_ptr<Device> inner = open_device("host");
    bool call_first = false;
    const DeviceInfo& info() const noexcept override { return inner->info(); }
    std::unique_ptr<DeviceBuffer> do_allocate(std::uint64_t bytes, MemoryPlace place) override {
      return inner->allocate(bytes, place);
    }
    std::unique_ptr<StagingBuffer> do_allocate_staging(std::uint64_t bytes) override {
      return inner->allocate_staging(bytes);
    }
    void finish() override {}
    void do_upload(StagingBuffer&, std::uint64_t, DeviceBuffer&, std::uint64_t, std::uint64_t,
                   TransferDone done) override {
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

class AppBuffer final : public DeviceBufferImpl {
 public:
  explicit AppBuffer(std::unique_ptr<DeviceBuffer> inner) : inner_(std::move(inner)) {}
  std::uint64_t size() const noexcept override { return inner_->size(); }
  NativeHandle native() const noexcept override { return {kAppHandle, inner_->native().handle}; }
  std::string_view mechanism() const noexcept override { return "app"; }
  std::span<std::byte> begin_host_write() override { return inner_->begin_host_write(); }
  void end_host_write() override { inner_->end_host_write(); }

 protected:
  void do_read_back(std::uint64_t offset, std::span<std::byte> dst) override { inner_->read_back(offset, dst); }

 private:
  std::unique_ptr<DeviceBuffer> inner_;
};

class AppDevice final : public DeviceImpl {
 public:
  AppDevice() : info_(inner_->info()) {
    info_.backend = "app";
    info_.caps.import_host_ptr = false;  // direct: host-visible allocations of its own
  }
  const DeviceInfo& info() const noexcept override { return info_; }
  std::unique_ptr<StagingBuffer> do_allocate_staging(std::uint64_t bytes) override {
    return inner_->allocate_staging(bytes);
  }
  void finish() override {}

 protected:
  std::unique_ptr<DeviceBuffer> do_allocate(std::uint64_t bytes, MemoryPlace place) override {
    return std::make_unique<AppBuffer>(inner_->allocate(bytes, place));
  }
  void do_upload(StagingBuffer&, std::uint64_t, DeviceBuffer&, std::uint64_t, std::uint64_t, TransferDone) override {
    fail(ErrorCode::unsupported, "app: direct only");
  }

 private:
  std::unique_ptr<Device> inner_ = open_device("host");
  DeviceInfo info_;
};

class AppBackend final : public BackendImpl {
 public:
  std::string_view name() const noexcept override { return "app"; }
  std::vector<DeviceInfo> devices() override { return {AppDevice().info()}; }
  std::unique_ptr<Device> open(std::uint32_t, const DeviceOverrides&) override { return std::make_unique<AppDevice>(); }
};

// The same backend as if compiled against another lwload's backend_impl.hpp.
class StaleBackend final : public BackendImpl {
 public:
  StaleBackend() : BackendImpl(LWLOAD_BACKEND_INTERFACE_VERSION + 1) {}
  std::string_view name() const noexcept override { return "stale"; }
  std::vector<DeviceInfo> devices() override { return {}; }
  std::unique_ptr<Device> open(std::uint32_t, const DeviceOverrides&) override { return nullptr; }
};

}  // namespace app_backend

TEST_CASE("registration refuses a backend built against another backend interface version") {
  CHECK(app_backend::AppBackend().interface_version() == LWLOAD_BACKEND_INTERFACE_VERSION);
  const Error e =
      test::error_of([] { BackendRegistry::instance().add(std::make_shared<app_backend::StaleBackend>()); });
  CHECK(e.code() == ErrorCode::usage);
  CHECK(std::string(e.what()) == str("backend 'stale' was built against backend interface version ",
                                     LWLOAD_BACKEND_INTERFACE_VERSION + 1, "; this lwload implements version ",
                                     LWLOAD_BACKEND_INTERFACE_VERSION,
                                     " (rebuild it against this lwload's lwload/backend_impl.hpp)"));
  CHECK(BackendRegistry::instance().find("stale") == nullptr);
  for (const auto& backend : BackendRegistry::instance().backends())
    CHECK(backend->interface_version() == LWLOAD_BACKEND_INTERFACE_VERSION);
}

TEST_CASE("a backend an application registers hands out its own typed handle, through the C++ and the C API") {
  using namespace app_backend;
  CHECK(native_type_name(kAppHandle) == "app_tensor");
  CHECK(register_native_type("app_tensor") == kAppHandle);  // the same name, the same type
  // A built-in backend's type is registered the same way: its name gives its value.
  CHECK(register_native_type("cu_deviceptr") == cu_deviceptr_type());
  CHECK(native_type_name(cu_deviceptr_type()) == "cu_deviceptr");
  CHECK(cu_deviceptr_type() != NativeType::host_ptr);
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

  // The application's own C constructor, as the built-in backends write theirs (c_api_device):
  // the device it opens, or NULL with the error it threw.
  lwload_device* own = c_api_device(&err, [] { return BackendRegistry::instance().find("app")->open(0, {}); });
  REQUIRE((own && !err));
  CHECK(std::string(lwload_device_id(own)) == "app:0");
  lwload_device_free(own);
  CHECK(c_api_device(&err, []() -> std::unique_ptr<Device> { fail(ErrorCode::unsupported, "no such API here"); }) ==
        nullptr);
  REQUIRE(err);
  CHECK(lwload_error_status(err) == LWLOAD_UNSUPPORTED);
  CHECK(std::string(lwload_error_message(err)).find("no such API here") != std::string::npos);
  lwload_error_free(err);
  lwload_manifest_free(m);
}

namespace faulty_backend {

// What the next device the "faulty" backend opens gets wrong (test::FaultyDevice over the host).
struct Faults {
  int fail_allocation = -1;
  int fail_upload = -1;
  bool system_error_on_open = false;  // open throws what the standard library throws (std::system_error)
};
Faults next;

class FaultyBackend final : public BackendImpl {
 public:
  std::string_view name() const noexcept override { return "faulty"; }
  std::vector<DeviceInfo> devices() override { return {open_device("host")->info()}; }
  std::unique_ptr<Device> open(std::uint32_t, const DeviceOverrides&) override {
    if (next.system_error_on_open)
      throw std::system_error(std::make_error_code(std::errc::no_such_device), "faulty: /dev/faulty0");
    auto device = std::make_unique<test::FaultyDevice>(open_device("host"));
    device->fail_allocation = next.fail_allocation;
    device->fail_upload = next.fail_upload;
    return device;
  }
};

}  // namespace faulty_backend

TEST_CASE(
    "the C API reports a plan that does not fit, a failed allocation and a failed transfer by their own statuses") {
  BackendRegistry::instance().add(std::make_shared<faulty_backend::FaultyBackend>());
  test::TempDir dir;
  synth::SynthSpec spec;
  spec.total_bytes = 64 << 10;
  spec.tensor_count = 4;
  const auto path = dir / "m.safetensors";
  synth::write_model(path, spec);
  lwload_error* err = nullptr;
  lwload_manifest* m = lwload_manifest_open(path.c_str(), &err);
  REQUIRE((m && !err));

  struct Case {
    const char* what;
    faulty_backend::Faults faults;
    const char* placement;
    const char* budget;
    lwload_status status;
    const char* name;
    const char* says;
  };
  const Case cases[] = {
      {"a staging budget below one slot",
       {},
       "staged",
       "1",
       LWLOAD_DOES_NOT_FIT,
       "does_not_fit",
       "staging budget of 1 bytes"},
      {"the first allocation refused",
       {1, -1},
       "direct",
       "64MiB",
       LWLOAD_OUT_OF_MEMORY,
       "out_of_memory",
       "allocation 1"},
      {"the first transfer failed", {-1, 1}, "staged", "64MiB", LWLOAD_DEVICE, "device", "transfer failed"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.what);
    faulty_backend::next = c.faults;
    lwload_device* d = lwload_device_open("faulty", &err);
    REQUIRE((d && !err));
    lwload_load_options* o = lwload_load_options_new();
    REQUIRE(lwload_load_options_set(o, "placement", c.placement, nullptr) == LWLOAD_OK);
    REQUIRE(lwload_load_options_set(o, "budget", c.budget, nullptr) == LWLOAD_OK);
    CHECK(lwload_load(m, d, o, &err) == nullptr);
    REQUIRE(err);
    CHECK(lwload_error_status(err) == c.status);
    CHECK(std::string(lwload_status_name(lwload_error_status(err))) == c.name);
    CHECK_MESSAGE(std::string(lwload_error_message(err)).find(c.says) != std::string::npos, lwload_error_message(err));
    lwload_error_free(err);
    err = nullptr;
    lwload_load_options_free(o);
    lwload_device_free(d);
  }
  lwload_manifest_free(m);

  // A backend (an application's own, behind the registry) that lets the standard library's error
  // through: an I/O status with its words, as the C API promises for std::system_error.
  faulty_backend::next = {};
  faulty_backend::next.system_error_on_open = true;
  CHECK(lwload_device_open("faulty", &err) == nullptr);
  REQUIRE(err);
  CHECK(lwload_error_status(err) == LWLOAD_IO);
  CHECK_MESSAGE(std::string(lwload_error_message(err)).find("/dev/faulty0") != std::string::npos,
                lwload_error_message(err));
  lwload_error_free(err);
  faulty_backend::next = {};
}

TEST_CASE("the page cache is counted in the kernel's pages, whatever page size lwload rounds to") {
  // Suite page_sizes runs this with LWLOAD_PAGE_SIZE at 16 and 64 KiB: regions round to those,
  // while cachestat and mincore count the kernel's own pages. A sparse file with three pages
  // written (in the page cache) and holes between them (not) makes a count in the wrong unit show.
  test::TempDir dir;
  const auto path = dir / "sparse.bin";
  const std::uint64_t kernel_page = system_page_size();
  const std::uint64_t size = 4 << 20;
  const int fd = ::open(path.c_str(), O_CREAT | O_RDWR | O_TRUNC, 0600);
  REQUIRE(fd >= 0);
  REQUIRE(::ftruncate(fd, static_cast<off_t>(size)) == 0);
  const std::vector<char> page_bytes(kernel_page, 'x');
  for (const std::uint64_t at : {std::uint64_t{0}, (1 << 20) + 3 * kernel_page, std::uint64_t{3} << 20})
    REQUIRE(::pwrite(fd, page_bytes.data(), kernel_page, static_cast<off_t>(at)) == static_cast<ssize_t>(kernel_page));
  // An independent count: mincore over a mapping of the whole file, in kernel pages.
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  REQUIRE(map != MAP_FAILED);
  std::vector<unsigned char> in_core(size / kernel_page);
  REQUIRE(::mincore(map, size, in_core.data()) == 0);
  ::munmap(map, size);
  ::close(fd);
  std::uint64_t cached = 0;
  for (const unsigned char page : in_core) cached += (page & 1) * kernel_page;
  MESSAGE("page size ", page_size(), ", kernel page ", kernel_page, ", cached ", cached, " of ", size, " bytes");
  REQUIRE(cached >= 3 * kernel_page);
  REQUIRE(cached < size / 4);  // the holes are not cached: a count 4x too large still fits the file
  const auto file = posix_file_system()->open(path);
  // Without cachestat (the kernel matrix) count_cached samples: in the kernel's pages too, but an
  // estimate; cached_bytes counts every page either way.
  const io::CachedCount count = io::count_cached(*file, 0, size);
  if (count.exact()) CHECK(count.bytes == cached);
  else CHECK(count.samples == io::kSampledPages);
  CHECK(io::cached_bytes(*file, 0, size) == cached);
}

TEST_CASE("DeviceBuffer::read_back and view check ranges once: host and null give the one error") {
  test::TempDir dir;
  CHECK(test::check_device_ranges(*open_device("host"), dir.path()) == 3);  // allocated, host_visible, mapped_file
  CHECK(test::check_device_ranges(*open_device("null"), dir.path(), false) == 1);
}

TEST_CASE("RandomAccessFile::map checks its range once: every kind of file gives the one error") {
  test::TempDir dir;
  const std::vector<std::byte> bytes(1000, std::byte{7});
  test::write_file(dir / "f.bin", bytes);
  auto memory = std::make_shared<MemoryFileSystem>();
  memory->add_file("/m.bin", bytes);
  std::shared_ptr<const RandomAccessFile> posix = posix_file_system()->open(dir / "f.bin");
  std::vector<std::unique_ptr<RandomAccessFile>> files;
  files.push_back(posix_file_system()->open(dir / "f.bin"));
  files.push_back(memory->open("/m.bin"));
  files.push_back(io::window(posix, 100, 1000 - 100, "window"));
  files.push_back(io::borrowed_memory(bytes, "borrowed"));
  for (const auto& file : files) {
    const std::uint64_t size = file->size();
    CAPTURE(file->path().string());
    // Not a structured binding: clang 15 cannot capture one in the lambda below.
    for (const auto& range : {std::pair<std::uint64_t, std::uint64_t>{size - 10, 11},
                              {size + 1, 0},
                              {std::numeric_limits<std::uint64_t>::max() - 1, 4}}) {
      const std::uint64_t offset = range.first, length = range.second;
      const Error e = test::error_of([&] { file->map(offset, length); });
      CHECK(e.code() == ErrorCode::bad_input);
      CHECK(std::string(e.what()) == str(file->path().string(), ": mapping [", offset, ", +", length,
                                         ") extends past the end of the file (", size, " bytes)"));
    }
    const auto whole = file->map(0, size);
    if (whole) CHECK(whole->bytes().size() == size);
  }
}

namespace mapped_pages {

// The POSIX file system, recording every map() call the loader makes.
class RecordingFile final : public RandomAccessFile {
 public:
  RecordingFile(std::unique_ptr<RandomAccessFile> inner, std::vector<std::pair<std::uint64_t, std::uint64_t>>& maps)
      : inner_(std::move(inner)), maps_(maps) {}
  const std::filesystem::path& path() const noexcept override { return inner_->path(); }
  std::uint64_t size() const override { return inner_->size(); }
  std::size_t read_at(std::uint64_t offset, std::span<std::byte> dst) const override {
    return inner_->read_at(offset, dst);
  }
  int native_handle() const noexcept override { return inner_->native_handle(); }
  FileIdentity identity() const override { return inner_->identity(); }

 protected:
  std::shared_ptr<const FileMapping> do_map(std::uint64_t offset, std::uint64_t length,
                                            MapAccess access) const override {
    maps_.emplace_back(offset, length);
    return inner_->map(offset, length, access);
  }

 private:
  std::unique_ptr<RandomAccessFile> inner_;
  std::vector<std::pair<std::uint64_t, std::uint64_t>>& maps_;
};

class RecordingFileSystem final : public FileSystem {
 public:
  std::unique_ptr<RandomAccessFile> open(const std::filesystem::path& path, FileOpenFlags flags = {}) override {
    return std::make_unique<RecordingFile>(inner_->open(path, flags), maps);
  }
  bool is_directory(const std::filesystem::path& path) override { return inner_->is_directory(path); }
  bool exists(const std::filesystem::path& path) override { return inner_->exists(path); }
  std::vector<std::pair<std::uint64_t, std::uint64_t>> maps;

 private:
  std::shared_ptr<FileSystem> inner_ = posix_file_system();
};

}  // namespace mapped_pages

TEST_CASE("a zero-copy load maps exactly the pages its plan gives each region, the file's last page included") {
  test::TempDir dir;
  synth::SynthSpec spec;  // packed: the data starts mid-page and the file ends mid-page
  spec.total_bytes = 3 << 20;
  spec.tensor_count = 5;
  const auto path = dir / "m.safetensors";
  synth::write_model(path, spec);
  const auto size = std::filesystem::file_size(path);
  REQUIRE(size % page_size() != 0);
  auto files = std::make_shared<mapped_pages::RecordingFileSystem>();
  OpenOptions open;
  open.file_system = files;
  const Manifest manifest = open_manifest(path, open);
  files->maps.clear();  // a reader may map headers
  const auto device = open_device("host");
  LoadOptions options;
  options.plan.force = Placement::zero_copy;
  const Weights w = load(manifest, *device, options);
  REQUIRE(w.plan().count(Placement::zero_copy) == 5);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> planned;
  for (const ImportRegion& region : w.plan().regions) {
    if (!region.imported()) continue;
    CHECK(region.map_offset % page_size() == 0);
    CHECK(region.map_offset < region.offset);  // the header's page is the first one mapped
    planned.emplace_back(region.map_offset, std::min(region.map_length, size - region.map_offset));
  }
  REQUIRE(!planned.empty());
  CHECK(files->maps == planned);
  CHECK(planned.back().first + planned.back().second == size);  // the last page, to the file's end
  CHECK(verify(w).tensors == 5);
}
