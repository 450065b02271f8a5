// Level Zero backend tests, run through the REAL Level Zero loader against the simulated driver
// in tests/ze_sim (a test double; there is no Intel hardware in CI).
//
// The loader reads ZE_ENABLE_ALT_DRIVERS once per process, so every simulated configuration runs
// in its own child process: the parent test cases below re-run this executable with the driver's
// environment and `--no-skip -tc=<child case>`; the child cases (marked skip, so a plain run does
// not execute them) do the real work and print a marker the parent checks for.
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "lwload/backend.hpp"
#include "lwload/error.hpp"
#include "lwload/level_zero.hpp"
#include "lwload/loader.hpp"
#include "lwload/manifest.hpp"
#include "lwload/plan.hpp"
#include "synth/synth.hpp"
#include "support/budget_checks.hpp"
#include "support/verify_checks.hpp"
#include "support/range_checks.hpp"
#include "support/truncation_checks.hpp"
#include "support/test_support.hpp"

namespace fs = std::filesystem;
using namespace lwload;

namespace {

fs::path self_exe() { return fs::read_symlink("/proc/self/exe"); }
fs::path sim_library() { return self_exe().parent_path() / "ze_sim" / "libze_sim.so"; }

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : fallback;
}
std::string sim_mode() { return env_or("LWLOAD_ZE_SIM", ""); }

// ---- parent side: run a child case under one simulated configuration ----

struct ChildResult {
  int status = -1;
  std::string output;
};

ChildResult run_child(const std::string& mode, const std::string& test_case, const std::string& extra_env = {}) {
  ChildResult r;
  const std::string command = "env ZE_ENABLE_ALT_DRIVERS='" + sim_library().string() + "' LWLOAD_ZE_SIM=" + mode + " " +
                              extra_env + " '" + self_exe().string() + "' --no-skip --no-colors -tc='" + test_case +
                              "' 2>&1";
  r.status = test::run_command(command, &r.output);
  return r;
}

void expect_child(const std::string& mode, const std::string& test_case, const std::string& extra_env = {}) {
  INFO("mode " << mode << ", child '" << test_case << "' " << extra_env);
  const ChildResult r = run_child(mode, test_case, extra_env);
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK(r.output.find("ZE-CHILD-OK " + test_case) != std::string::npos);
}

bool have_sim() {
  return test::available("level_zero_sim", fs::exists(sim_library()),
                         "simulated Level Zero driver not built (no libze-dev)");
}

// ---- child side helpers ----

void child_ok(const std::string& name) { std::cout << "ZE-CHILD-OK " << name << std::endl; }

// Objects the simulated driver still holds (contexts, lists, events, allocations, imports).
long long sim_live_objects() {
  void* lib = dlopen(sim_library().c_str(), RTLD_NOW | RTLD_NOLOAD);
  REQUIRE_MESSAGE(lib != nullptr, "the simulated driver is not loaded in this process");
  auto live = reinterpret_cast<long long (*)()>(dlsym(lib, "lwload_ze_sim_live_objects"));
  auto describe = reinterpret_cast<void (*)(char*, unsigned long)>(dlsym(lib, "lwload_ze_sim_describe"));
  const bool hooks_found = live != nullptr && describe != nullptr;
  REQUIRE(hooks_found);
  char text[256] = {};
  describe(text, sizeof text);
  MESSAGE("simulated driver: " << text);
  const long long n = live();
  dlclose(lib);
  return n;
}

fs::path write_synth(const test::TempDir& dir, std::uint64_t bytes, std::uint32_t tensors, std::uint64_t alignment,
                     const std::string& format = "safetensors") {
  synth::SynthSpec spec;
  spec.format = format;
  spec.total_bytes = bytes;
  spec.tensor_count = tensors;
  spec.alignment = alignment;
  spec.seed = 7;
  const fs::path path = dir / ("model." + format);
  synth::write_model(path, spec);
  return path;
}

// How a default load places tensors on this simulated device (LWLOAD_ZE_SIM_IMPORT overrides the
// mode's import path).
std::string expected_mechanism(const std::string& mode) {
  const std::string import = env_or("LWLOAD_ZE_SIM_IMPORT", "");
  if (mode == "dgpu") return "allocated";
  if (env_or("LWLOAD_ZE_SIM_REFUSE_IMPORT", "0") != "0") return "host_visible";  // declined → direct
  if (import == "zex") return "ze_import";
  if (import == "memmap") return "ze_memmap";
  if (import == "none") return "host_visible";
  if (mode == "igpu-import") return "ze_import";
  if (mode == "npu") return "ze_memmap";
  if (mode == "igpu") return "host_visible";
  return "allocated";
}

// Loads, verifies and checks each tensor went where this device should put it.
void load_and_verify(const fs::path& model, const PlanOptions& plan_options, const std::string& mechanism) {
  const Manifest manifest = open_manifest(model);
  auto device = open_device("level_zero:0");
  REQUIRE(device != nullptr);
  LoadOptions options;
  options.plan = plan_options;
  options.plan.io = IoEngine::pread;
  std::size_t ready = 0;
  options.on_tensor_ready = [&](const TensorHandle&) { ++ready; };
  {
    Weights weights = load(manifest, *device, options);
    CHECK(ready == manifest.tensors.size());
    for (const TensorHandle& t : weights.tensors()) {
      INFO("tensor " << t.info->name << " placement " << placement_name(t.placement));
      CHECK(t.mechanism == mechanism);
      CHECK(t.native.type == lwload::ze_ptr_type());
    }
    const VerifyReport report = verify(weights);
    CHECK(report.tensors == manifest.tensors.size());
    CHECK(report.bytes == manifest.total_bytes());
  }
  device.reset();
  CHECK(sim_live_objects() == 0);
}

}  // namespace

// ============================ child cases (run by the parent) ============================

TEST_CASE("ze child: discovery" * doctest::skip()) {
  const std::string mode = sim_mode();
  std::vector<DeviceInfo> ze;
  for (const auto& d : list_devices())
    if (d.backend == "level_zero") ze.push_back(d);
  if (mode == "none") {
    CHECK(ze.empty());
    child_ok("ze child: discovery");
    return;
  }
  REQUIRE(ze.size() == 1);
  const DeviceInfo& d = ze[0];
  CHECK(d.id() == "level_zero:0");
  CHECK(d.name.find(mode) != std::string::npos);
  const auto detail = [&](const std::string& key) {
    for (const auto& [k, v] : d.details)
      if (k == key) return v;
    return std::string("<missing>");
  };
  CHECK(detail("vendor_id") == "0x8086");
  CHECK(detail("extensions").find("ZE_experimental_lwload_simulated_driver") != std::string::npos);
  CHECK(d.caps.pinned_staging);
  CHECK(d.caps.max_alloc == 4ull << 30);
  if (mode == "dgpu") {
    CHECK(d.kind == DeviceKind::dgpu);
    CHECK(d.memory == MemoryModel::discrete);
    CHECK_FALSE(d.caps.import_host_ptr);
    CHECK_FALSE(d.caps.host_visible_alloc);
    CHECK(d.caps.device_memory == 8ull << 30);  // the sum of its two memory regions (one per tile)
    CHECK(detail("copy_queue_group") == "1");   // the copy-only engine
  } else {
    CHECK(d.memory == MemoryModel::unified);
    CHECK(d.caps.host_visible_alloc);
    CHECK(d.kind == (mode == "npu" ? DeviceKind::npu : DeviceKind::igpu));
    CHECK(detail("type") == (mode == "npu" ? "VPU" : "GPU"));
    CHECK(d.caps.import_host_ptr == (mode != "igpu"));
    CHECK(detail("import") == (mode == "igpu-import" ? "zexDriverImportExternalPointer"
                               : mode == "npu"       ? "ZE_extension_external_memmap_sysmem"
                                                     : "none"));
  }
  child_ok("ze child: discovery");
}

TEST_CASE("ze child: device api" * doctest::skip()) {
  const std::string mode = sim_mode();
  auto device = open_device("level_zero:0");
  REQUIRE(device != nullptr);
  constexpr std::size_t kBytes = 3 * 1024 * 1024 + 123;
  {
    // Staged: many small uploads through two staging slots, reused as completions arrive.
    auto dst = device->allocate(kBytes, MemoryPlace::device_local);
    CHECK(dst->mechanism() == "allocated");
    std::vector<std::unique_ptr<StagingBuffer>> slots;
    slots.push_back(device->allocate_staging(64 * 1024));
    slots.push_back(device->allocate_staging(64 * 1024));
    std::mutex mutex;
    std::condition_variable cv;
    std::vector<bool> busy(2, false);
    int failures = 0;
    for (std::size_t off = 0, n = 0; off < kBytes; ++n) {
      const std::size_t slot = n % 2;
      {
        std::unique_lock lock(mutex);
        cv.wait(lock, [&] { return !busy[slot]; });
        busy[slot] = true;
      }
      const std::size_t len = std::min<std::size_t>(64 * 1024, kBytes - off);
      auto bytes = slots[slot]->bytes();
      for (std::size_t i = 0; i < len; ++i) bytes[i] = std::byte((off + i) * 131 % 251);
      device->upload(*slots[slot], 0, *dst, off, len, [&, slot](std::exception_ptr e) {
        std::lock_guard lock(mutex);
        if (e) ++failures;
        busy[slot] = false;
        cv.notify_all();
      });
      off += len;
    }
    device->finish();
    CHECK(failures == 0);
    std::vector<std::byte> back(kBytes);
    dst->read_back(0, back);
    bool same = true;
    for (std::size_t i = 0; i < kBytes && same; ++i) same = back[i] == std::byte(i * 131 % 251);
    CHECK(same);
    // A view addresses the same bytes at an offset.
    auto view = dst->view(1000, 4096);
    REQUIRE(view != nullptr);
    std::vector<std::byte> part(16);
    view->read_back(5, part);
    CHECK(part[0] == std::byte(1005 * 131 % 251));
    CHECK_THROWS_AS(dst->read_back(kBytes - 4, part), Error);
  }
  if (device->info().caps.host_visible_alloc) {
    auto host = device->allocate(4096, MemoryPlace::host_visible);
    auto span = host->begin_host_write();
    REQUIRE(span.size() == 4096);
    std::memset(span.data(), 0x5c, span.size());
    host->end_host_write();
    std::vector<std::byte> back(8);
    host->read_back(100, back);
    CHECK(back[7] == std::byte{0x5c});
  }
  if (device->info().caps.import_host_ptr) {
    // Import read-only mapped file pages; the device sees the file's bytes in place.
    test::TempDir dir;
    std::vector<std::byte> content(3 * 4096 + 10);
    for (std::size_t i = 0; i < content.size(); ++i) content[i] = std::byte(i % 199);
    test::write_file(dir / "pages.bin", content);
    const int fd = ::open((dir / "pages.bin").c_str(), O_RDONLY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    void* map = mmap(nullptr, content.size(), PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    REQUIRE(map != MAP_FAILED);
    {
      // Whole pages, as the planner shapes regions (size_multiple): the mapping's 4 pages.
      auto imported = device->import_host({static_cast<const std::byte*>(map), 4 * 4096}).buffer;
      if (env_or("LWLOAD_ZE_SIM_REFUSE_IMPORT", "0") != "0") {
        // A driver that refuses these pages declines the import; the loader then goes direct.
        CHECK(imported == nullptr);
        CHECK(sim_live_objects() > 0);  // the device's own context, lists and events only
        munmap(map, content.size());
        device.reset();
        CHECK(sim_live_objects() == 0);
        child_ok("ze child: device api");
        return;
      }
      REQUIRE(imported != nullptr);
      CHECK(imported->mechanism() == expected_mechanism(mode));
      CHECK(imported->native().handle == map);
      std::vector<std::byte> back(10);
      imported->read_back(3 * 4096, back);
      CHECK(std::memcmp(back.data(), content.data() + 3 * 4096, 10) == 0);
      // A range that does not start on a page, or is not whole pages, is declined with the reason
      // before the driver is asked (Device::import_host), and nothing leaks; an empty one is misuse.
      const long long before = sim_live_objects();
      const ImportResult unaligned = device->import_host({static_cast<const std::byte*>(map) + 1, 4096});
      CHECK(unaligned.buffer == nullptr);
      CHECK(unaligned.declined.find("not aligned") != std::string::npos);
      const ImportResult partial = device->import_host({static_cast<const std::byte*>(map), 100});
      CHECK(partial.buffer == nullptr);
      CHECK(partial.declined.find("not a multiple of 4096") != std::string::npos);
      CHECK(test::error_of([&] {
              (void)device->import_host({static_cast<const std::byte*>(map), 0});
            }).code() == ErrorCode::usage);
      CHECK(sim_live_objects() == before);
    }
    munmap(map, content.size());
  } else {
    std::byte page[16] = {};
    CHECK(device->import_host({page, sizeof page}).buffer == nullptr);
  }
  device.reset();
  CHECK(sim_live_objects() == 0);
  child_ok("ze child: device api");
}

TEST_CASE("ze child: load and verify" * doctest::skip()) {
  const std::string mode = sim_mode();
  const std::string direct = mode == "dgpu" ? "allocated" : "host_visible";
  test::TempDir dir;
  // Page-aligned tensors: zero-copy where the device imports, direct or staged otherwise.
  const fs::path aligned = write_synth(dir, 24 << 20, 12, 4096);
  load_and_verify(aligned, {}, expected_mechanism(mode));
  // Packed safetensors (offsets fall anywhere, as in real files): covering regions import them in
  // place too, each tensor a pointer + offset inside its region.
  const fs::path packed = write_synth(dir, 24 << 20, 12, 0);
  load_and_verify(packed, {}, expected_mechanism(mode));
  // Staged works on every device; a small ring forces slot reuse (4 x 256 KiB for 24 MiB).
  PlanOptions staged;
  staged.force = Placement::staged;
  staged.staging_budget = 1 << 20;
  staged.staging_slots = 4;
  load_and_verify(packed, staged, "allocated");
  // GGUF at llama.cpp's 32-byte alignment: the same.
  const fs::path gguf = write_synth(dir, 6 << 20, 5, 32, "gguf");
  load_and_verify(gguf, {}, expected_mechanism(mode));
  PlanOptions forced_direct;
  forced_direct.force = Placement::direct;
  if (mode != "dgpu") load_and_verify(gguf, forced_direct, direct);
  child_ok("ze child: load and verify");
}

TEST_CASE("ze child: application context" * doctest::skip()) {
  // The application's own driver, context and device, made before lwload is involved.
  REQUIRE(zeInit(0) == ZE_RESULT_SUCCESS);
  std::uint32_t count = 1;
  ze_driver_handle_t driver = nullptr;
  REQUIRE(zeDriverGet(&count, &driver) == ZE_RESULT_SUCCESS);
  ze_device_handle_t ze_device = nullptr;
  count = 1;
  REQUIRE(zeDeviceGet(driver, &count, &ze_device) == ZE_RESULT_SUCCESS);
  const ze_context_desc_t desc{ZE_STRUCTURE_TYPE_CONTEXT_DESC, nullptr, 0};
  ze_context_handle_t context = nullptr;
  REQUIRE(zeContextCreate(driver, &desc, &context) == ZE_RESULT_SUCCESS);

  test::TempDir dir;
  const Manifest manifest = open_manifest(write_synth(dir, 6 << 20, 6, 0));
  for (const auto placement : {std::optional<Placement>{}, std::optional{Placement::staged}}) {
    auto device = open_level_zero_device(driver, context, ze_device);
    CHECK(device->info().id() == "level_zero:0");
    LoadOptions options;
    options.plan.force = placement;  // automatic (zero_copy where the device imports), then staged
    const Weights weights = load(manifest, *device, options);
    for (const TensorHandle& t : weights.tensors()) {
      const auto in_ze = level_zero_tensor(t);
      REQUIRE(in_ze.has_value());
      CHECK(in_ze->pointer == t.native.handle);
      CHECK(in_ze->offset == t.offset);
    }
    CHECK(verify(weights).tensors == manifest.tensors.size());
  }
  // lwload released what it made and nothing of the application's: its context is the one object
  // left, still usable, and the application destroys it.
  CHECK(sim_live_objects() == 1);
  void* scratch = nullptr;
  const ze_host_mem_alloc_desc_t host_desc{ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, nullptr, 0};
  CHECK(zeMemAllocHost(context, &host_desc, 4096, 64, &scratch) == ZE_RESULT_SUCCESS);
  CHECK(zeMemFree(context, scratch) == ZE_RESULT_SUCCESS);
  CHECK(zeContextDestroy(context) == ZE_RESULT_SUCCESS);
  CHECK(sim_live_objects() == 0);

  CHECK(test::error_of([&] { (void)open_level_zero_device(driver, context, nullptr); }).code() == ErrorCode::usage);
  child_ok("ze child: application context");
}

// Expects the load to fail cleanly with `code` and a message containing `text`, and no leaks.
static void expect_load_failure(ErrorCode code, const std::string& text, const PlanOptions& plan_options = {}) {
  test::TempDir dir;
  const fs::path model = write_synth(dir, 8 << 20, 8, 0);
  const Manifest manifest = open_manifest(model);
  {
    auto device = open_device("level_zero:0");
    LoadOptions options;
    options.plan = plan_options;
    options.plan.io = IoEngine::pread;
    try {
      (void)load(manifest, *device, options);
      FAIL("the load succeeded");
    } catch (const Error& e) {
      MESSAGE("load failed as expected: " << e.what());
      CHECK(e.code() == code);
      CHECK(std::string(e.what()).find(text) != std::string::npos);
    }
  }
  CHECK(sim_live_objects() == 0);
}

TEST_CASE("ze child: allocation failure" * doctest::skip()) {
  expect_load_failure(ErrorCode::out_of_memory, "ZE_RESULT_ERROR_OUT_OF");
  child_ok("ze child: allocation failure");
}

TEST_CASE("ze child: a staging slot the driver refuses" * doctest::skip()) {
  // Host-visible memory serving as a slot: the error says it was for staging.
  auto device = open_device("level_zero:0");
  const Error refused = test::error_of([&] { (void)device->allocate_staging(1 << 20); });
  CHECK(refused.code() == ErrorCode::out_of_memory);
  CHECK(std::string(refused.what()).find("staging slot of 1048576 bytes: ") == 0);
  CHECK(std::string(refused.what()).find("zeMemAllocHost") != std::string::npos);
  device.reset();
  CHECK(sim_live_objects() == 0);
  child_ok("ze child: a staging slot the driver refuses");
}

TEST_CASE("ze child: copy refused" * doctest::skip()) {
  expect_load_failure(ErrorCode::device, "ZE_RESULT_ERROR_DEVICE_LOST");
  child_ok("ze child: copy refused");
}

TEST_CASE("ze child: device lost mid-load" * doctest::skip()) {
  PlanOptions staged;
  staged.force = Placement::staged;
  staged.staging_budget = 1 << 20;
  expect_load_failure(ErrorCode::device, "ZE_RESULT_ERROR_DEVICE_LOST", staged);
  child_ok("ze child: device lost mid-load");
}

TEST_CASE("ze child: too big for the device" * doctest::skip()) {
  // 64 MiB of device memory, a 96 MiB model: the plan refuses before any allocation.
  test::TempDir dir;
  const fs::path model = write_synth(dir, 96 << 20, 4, 0);
  auto device = open_device("level_zero:0");
  CHECK_THROWS_AS((void)load(open_manifest(model), *device, LoadOptions{}), Error);
  device.reset();
  CHECK(sim_live_objects() == 0);
  child_ok("ze child: too big for the device");
}

TEST_CASE("ze child: ranges" * doctest::skip()) {
  test::TempDir dir;
  CHECK(test::check_device_ranges(*open_device("level_zero:0"), dir.path()) >= 1);
  child_ok("ze child: ranges");
}

TEST_CASE("ze child: truncated after load" * doctest::skip()) {
  test::check_truncation_after_load("level_zero:0");
  CHECK(sim_live_objects() == 0);
  child_ok("ze child: truncated after load");
}

TEST_CASE("ze child: budgets" * doctest::skip()) {
  test::check_device_budgets("level_zero:0");
  CHECK(sim_live_objects() == 0);
  child_ok("ze child: budgets");
}

TEST_CASE("ze child: imports that pin" * doctest::skip()) {
  // Level Zero imports pin (a userptr of the pages): on a machine with less free memory than the
  // model, the regions past it fall back to direct with the reason, and the load verifies.
  test::TempDir dir;
  const fs::path model = write_synth(dir, 8 << 20, 16, 4096);
  const Manifest manifest = open_manifest(model);
  DeviceOverrides small_regions;  // 1 MiB regions, so some fit and the rest fall back
  small_regions.max_alloc = 1 << 20;
  auto device = open_device("level_zero:0", small_regions);
  REQUIRE(device->info().caps.import_host_ptr);
  CHECK(device->info().caps.import_pins == Pinning::yes);
  MachineMemory machine;
  machine.mem_total = machine.mem_available = 3 << 20;
  LoadOptions options;
  options.plan.machine = machine;
  options.plan.io = IoEngine::pread;
  options.plan.staging_budget = 1 << 20;
  {
    Weights weights = load(manifest, *device, options);
    const Plan& plan = weights.plan();
    CHECK(plan.count(Placement::zero_copy) > 0);
    CHECK(plan.count(Placement::direct) > 0);
    CHECK(plan.host.pinned_imports <= machine.mem_available);
    for (const TensorPlan& tp : plan.tensors)
      if (tp.placement == Placement::direct) CHECK(tp.reason.find("imports pin memory") != std::string::npos);
    CHECK(verify(weights).tensors == manifest.tensors.size());
  }
  // The same driver modelled with imports that do not pin: evictable pages, refused without --lazy
  // (with the numbers), mapped with it.
  device.reset();
  DeviceOverrides no_pins = small_regions;
  no_pins.import_pins = Pinning::no;
  auto evictable = open_device("level_zero:0", no_pins);
  CHECK(evictable->info().caps.import_pins == Pinning::no);
  const Error refused = test::error_of([&] { (void)load(manifest, *evictable, options); });
  CHECK(refused.code() == ErrorCode::does_not_fit);
  CHECK(std::string(refused.what()).find("--lazy") != std::string::npos);
  options.lazy = true;
  {
    Weights weights = load(manifest, *evictable, options);
    CHECK(weights.plan().count(Placement::zero_copy) == manifest.tensors.size());
    CHECK_FALSE(weights.plan().host.resident_at_ready);
    CHECK(verify(weights).tensors == manifest.tensors.size());
  }
  evictable.reset();
  CHECK(sim_live_objects() == 0);
  child_ok("ze child: imports that pin");
}

TEST_CASE("ze child: a changed device byte" * doctest::skip()) {
  test::check_verify_finds_changed_byte("level_zero:0");
  CHECK(sim_live_objects() == 0);
  child_ok("ze child: a changed device byte");
}

// ============================ parent cases ============================

TEST_CASE("level_zero: no driver means no devices, not an error") {
  // This process runs without ZE_ENABLE_ALT_DRIVERS: no Level Zero driver is installed here.
  auto backend = BackendRegistry::instance().find("level_zero");
  if (backend == nullptr) {
    MESSAGE("built without Level Zero (no libze-dev): skipping");
    return;
  }
  CHECK_NOTHROW((void)backend->devices());
  if (!have_sim()) return;
  expect_child("none", "ze child: discovery");
}

TEST_CASE("level_zero: the four simulated devices load and verify") {
  if (!have_sim()) return;
  for (const std::string mode : {"igpu-import", "igpu", "npu", "dgpu"}) {
    expect_child(mode, "ze child: discovery");
    expect_child(mode, "ze child: device api");
    expect_child(mode, "ze child: load and verify");
    expect_child(mode, "ze child: budgets");
    expect_child(mode, "ze child: truncated after load");
    expect_child(mode, "ze child: ranges");
    expect_child(mode, "ze child: a changed device byte");
  }
}

TEST_CASE("level_zero: imports pin; past free memory they fall back to direct, or without pinning --lazy maps them") {
  if (!have_sim()) return;
  expect_child("igpu-import", "ze child: imports that pin");
}

TEST_CASE("level_zero: lwload works in the application's own context and never destroys it") {
  if (!have_sim()) return;
  for (const std::string mode : {"igpu-import", "dgpu"}) expect_child(mode, "ze child: application context");
}

TEST_CASE("level_zero: the other import path on each integrated device") {
  if (!have_sim()) return;
  // memmap on the GPU, zex on the NPU, and an NPU without import: every path on both kinds.
  for (const std::string mode : {"igpu-import", "npu"}) {
    const std::string other = mode == "npu" ? "LWLOAD_ZE_SIM_IMPORT=zex" : "LWLOAD_ZE_SIM_IMPORT=memmap";
    expect_child(mode, "ze child: device api", other);
    expect_child(mode, "ze child: load and verify", other);
  }
  expect_child("npu", "ze child: load and verify", "LWLOAD_ZE_SIM_IMPORT=none");
}

TEST_CASE("level_zero: an import the driver refuses falls back to direct placement") {
  if (!have_sim()) return;
  for (const std::string mode : {"igpu-import", "npu"}) {
    expect_child(mode, "ze child: device api", "LWLOAD_ZE_SIM_REFUSE_IMPORT=1");
    expect_child(mode, "ze child: load and verify", "LWLOAD_ZE_SIM_REFUSE_IMPORT=1");
  }
}

TEST_CASE("level_zero: misuse and driver failures give clean errors and leak nothing") {
  if (!have_sim()) return;
  expect_child("dgpu", "ze child: allocation failure", "LWLOAD_ZE_SIM_FAIL_ALLOC_AFTER=3");
  expect_child("igpu", "ze child: allocation failure", "LWLOAD_ZE_SIM_FAIL_ALLOC_AFTER=2");
  expect_child("dgpu", "ze child: a staging slot the driver refuses", "LWLOAD_ZE_SIM_FAIL_ALLOC_AFTER=0");
  expect_child("dgpu", "ze child: copy refused", "LWLOAD_ZE_SIM_FAIL_COPY_AT=5");
  expect_child("dgpu", "ze child: device lost mid-load", "LWLOAD_ZE_SIM_LOSE_DEVICE_AT=3");
  expect_child("igpu-import", "ze child: device lost mid-load", "LWLOAD_ZE_SIM_LOSE_DEVICE_AT=7");
  expect_child("dgpu", "ze child: too big for the device", "LWLOAD_ZE_SIM_DEVICE_MEMORY=67108864");
}

TEST_CASE("level_zero: lwload devices and profile on simulated devices") {
  if (!have_sim()) return;
  const char* exe = std::getenv("LWLOAD_EXE");
  if (exe == nullptr) {
    (void)lwload::test::have_exe();  // reports the skip; a failure under LWLOAD_REQUIRE=exe
    return;
  }
  test::TempDir dir;
  const fs::path model = write_synth(dir, 32 << 20, 6, 4096);
  for (const std::string mode : {"igpu-import", "npu", "dgpu"}) {
    const std::string env = "env ZE_ENABLE_ALT_DRIVERS='" + sim_library().string() + "' LWLOAD_ZE_SIM=" + mode + " ";
    std::string out;
    CHECK(test::run_command(env + "'" + exe + "' devices --json", &out) == 0);
    CHECK(out.find("\"level_zero:0\"") != std::string::npos);
    CHECK(out.find(mode == "dgpu" ? "\"dgpu\"" : mode == "npu" ? "\"npu\"" : "\"igpu\"") != std::string::npos);
    out.clear();
    CHECK(test::run_command(env + "'" + exe + "' devices", &out) == 0);
    CHECK(out.find("level_zero:0") != std::string::npos);
    out.clear();
    // profile exits 0 only when the memory contract held (zero-copy: anonymous growth bounded too).
    const int status = test::run_command(
        env + "'" + exe + "' profile --device level_zero:0 --json - '" + model.string() + "' 2>&1", &out);
    INFO(out);
    CHECK(status == 0);
    CHECK(out.find("level_zero:0") != std::string::npos);
    CHECK(out.find(mode == "dgpu" ? "\"placement\":\"staged\"" : "\"placement\":\"zero_copy\"") != std::string::npos);
  }
}

TEST_CASE("level_zero: an import refused with any code a driver declines with falls back to direct placement") {
  if (!have_sim()) return;
  // Each refusal of these pages (not of the device or its memory) is declined, on both import paths.
  for (const std::string code : {"unsupported_feature", "unsupported_alignment", "unsupported_size", "invalid_size"}) {
    const std::string env = "LWLOAD_ZE_SIM_REFUSE_IMPORT=1 LWLOAD_ZE_SIM_REFUSE_IMPORT_WITH=" + code;
    expect_child("igpu-import", "ze child: device api", env);
    expect_child("igpu-import", "ze child: load and verify", env);
    expect_child("npu", "ze child: load and verify", env);
  }
}
