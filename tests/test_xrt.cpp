// XRT backend tests, run through the REAL XRT library (Debian's libxrt_coreutil 2.13) against the
// simulated driver in tests/xrt_sim (a test double; there is no AMD NPU in CI). Meson runs this
// suite with XILINX_XRT naming tests/xrt_sim and XCL_EMULATION_MODE=noop, so XRT loads the
// simulation as its driver shim. The simulation reads its LWLOAD_XRT_SIM_* settings at each call,
// so one process runs every case (scoped settings below), and its counters say what the device saw.
#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <xrt/xrt_bo.h>
#include <xrt/xrt_device.h>

#include "core/align.hpp"
#include "lwload/backend.hpp"
#include "lwload/error.hpp"
#include "lwload/loader.hpp"
#include "lwload/lwload.h"
#include "lwload/manifest.hpp"
#include "lwload/plan.hpp"
#include "lwload/xrt.hpp"
#include "support/budget_checks.hpp"
#include "support/range_checks.hpp"
#include "support/test_support.hpp"
#include "support/truncation_checks.hpp"
#include "support/verify_checks.hpp"
#include "synth/synth.hpp"

namespace fs = std::filesystem;
using namespace lwload;

namespace {

fs::path sim_library() {
  const char* root = std::getenv("XILINX_XRT");
  return root != nullptr ? fs::path(root) / "lib" / "libxrt_noop.so.2" : fs::path();
}

bool have_sim() {
  return test::available("xrt_sim", !sim_library().empty() && fs::exists(sim_library()),
                         "simulated XRT driver not built (no libxrt-dev) or XILINX_XRT unset (run by meson test)");
}

// The simulation's hooks, from the copy XRT loaded (by the same path).
void* sim_hook(const char* name) {
  (void)list_devices();  // XRT loads its shim when it first enumerates
  void* lib = dlopen(sim_library().c_str(), RTLD_NOW | RTLD_NOLOAD);
  REQUIRE_MESSAGE(lib != nullptr, "XRT has not loaded the simulated driver");
  void* hook = dlsym(lib, name);
  dlclose(lib);
  REQUIRE_MESSAGE(hook != nullptr, name);
  return hook;
}

long long sim_counter(const char* name) {
  const auto counter = reinterpret_cast<long long (*)(const char*)>(sim_hook("lwload_xrt_sim_counter"));
  return counter(name);
}

std::string sim_describe() {
  const auto describe = reinterpret_cast<void (*)(char*, unsigned long)>(sim_hook("lwload_xrt_sim_describe"));
  char text[512] = {};
  describe(text, sizeof text);
  return text;
}

// What the device sees at `address` (xrt::bo::address()).
std::vector<std::byte> device_bytes(std::uint64_t address, std::size_t n) {
  const auto read =
      reinterpret_cast<int (*)(unsigned long long, void*, unsigned long long)>(sim_hook("lwload_xrt_sim_read_device"));
  std::vector<std::byte> bytes(n);
  REQUIRE_MESSAGE(read(address, bytes.data(), n) == 0, "no live device memory at ", address);
  return bytes;
}

// The XRT core device whose buffer holds `address` on the simulated device.
const void* owner_of(std::uint64_t address) {
  const auto owner = reinterpret_cast<const void* (*)(unsigned long long)>(sim_hook("lwload_xrt_sim_owner"));
  return owner(address);
}

// Nothing the simulated driver holds, and nothing it refused as out of bounds or misaligned.
void check_clean() {
  INFO("simulated driver: " << sim_describe());
  CHECK(sim_counter("live") == 0);
  CHECK(sim_counter("violations") == 0);
}

// One LWLOAD_XRT_SIM_* setting for the scope.
class SimSetting {
 public:
  SimSetting(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~SimSetting() { unsetenv(name_); }
  SimSetting(const SimSetting&) = delete;
  SimSetting& operator=(const SimSetting&) = delete;

 private:
  const char* name_;
};

fs::path write_synth(const test::TempDir& dir, std::uint64_t bytes, std::uint32_t tensors, std::uint64_t alignment) {
  synth::SynthSpec spec;
  spec.format = "safetensors";
  spec.total_bytes = bytes;
  spec.tensor_count = tensors;
  spec.alignment = alignment;
  spec.seed = 11;
  const fs::path path = dir / "model.safetensors";
  synth::write_model(path, spec);
  return path;
}

std::string_view mechanism_of(Placement placement) {
  switch (placement) {
    case Placement::zero_copy: return "xrt_userptr";
    case Placement::direct: return "host_visible";
    default: return "allocated";
  }
}

// Every loaded tensor: an xrt::bo on the device, the mechanism its placement gets, and on the
// device (the simulation's device memory, which only a sync or a device copy fills) the bytes the
// host reads back — which verify() then holds to the file.
void check_on_device(const Weights& weights) {
  for (const TensorHandle& t : weights.tensors()) {
    if (t.placement == Placement::skipped) continue;
    INFO("tensor " << t.info->name << " placement " << placement_name(t.placement));
    CHECK(t.mechanism == mechanism_of(t.placement));
    const auto on_xrt = xrt_tensor(t);
    REQUIRE(on_xrt.has_value());
    CHECK(&on_xrt->bo != t.native.handle);  // a copy sharing the buffer object
    CHECK(on_xrt->bo == *static_cast<const ::xrt::bo*>(t.native.handle));
    CHECK(on_xrt->offset == t.offset);
    if (t.bytes == 0) continue;
    std::vector<std::byte> host(t.bytes);
    weights.read_back(t, 0, host);
    CHECK((device_bytes(on_xrt->bo.address() + on_xrt->offset, t.bytes) == host));
  }
  const VerifyReport report = verify(weights);
  CHECK(report.tensors == weights.plan().tensors.size() - weights.plan().count(Placement::skipped));
}

}  // namespace

TEST_CASE("xrt: the simulated device is listed: an NPU sharing host memory, importing whole pages") {
  if (!have_sim()) return;
  std::vector<DeviceInfo> xrt;
  for (const auto& d : list_devices())
    if (d.backend == "xrt") xrt.push_back(d);
  REQUIRE(xrt.size() == 1);
  const DeviceInfo& d = xrt[0];
  CHECK(d.id() == "xrt:0");
  CHECK(d.name == "XRT noop device");  // XRT's noop device reports no name
  CHECK(d.kind == DeviceKind::npu);
  CHECK(d.memory == MemoryModel::unified);
  CHECK(d.caps.import_host_ptr);
  CHECK(d.caps.import_alignment == page_size());
  CHECK(d.caps.size_multiple == page_size());
  CHECK(d.caps.host_visible_alloc);
  CHECK(d.caps.import_pins == Pinning::yes);
  CHECK(d.caps.device_memory == 0);  // XRT reports memory banks only with an xclbin loaded
}

TEST_CASE("xrt: every placement loads the model corpus, on the device as in the file, and leaks nothing") {
  if (!have_sim()) return;
  const auto models = test::real_model_files();
  REQUIRE(models.size() >= 15);
  std::size_t zero_copy = 0, direct = 0, staged = 0;
  for (const auto& path : models) {
    CAPTURE(path.string());
    const Manifest manifest = open_manifest(path);
    for (const auto force :
         {std::optional<Placement>{}, std::optional{Placement::direct}, std::optional{Placement::staged}}) {
      CAPTURE(force ? placement_name(*force) : "auto");
      auto device = open_device("xrt:0");
      LoadOptions options;
      options.plan.force = force;
      options.plan.staging_budget = 1 << 20;  // slots reused on the larger models
      {
        const Weights weights = load(manifest, *device, options);
        const Plan& plan = weights.plan();
        if (force) CHECK(plan.count(*force) == plan.tensors.size() - plan.count(Placement::skipped));
        zero_copy += plan.count(Placement::zero_copy);
        direct += plan.count(Placement::direct);
        staged += plan.count(Placement::staged);
        check_on_device(weights);
      }
      device.reset();
      check_clean();
    }
  }
  CHECK(zero_copy > 0);
  CHECK(direct > 0);
  CHECK(staged > 0);
  MESSAGE(zero_copy << " zero_copy, " << direct << " direct, " << staged << " staged tensors; " << sim_describe());
}

TEST_CASE("xrt: packed and page-aligned tensors load zero-copy as sub-buffers of page-aligned user pointers") {
  if (!have_sim()) return;
  test::TempDir dir;
  const fs::path model = write_synth(dir, 8 << 20, 12, 0);
  const Manifest manifest = open_manifest(model);
  auto device = open_device("xrt:0");
  const long long userptrs = sim_counter("userptr");
  {
    const Weights weights = load(manifest, *device);
    CHECK(weights.plan().count(Placement::zero_copy) == 12);
    CHECK(sim_counter("userptr") - userptrs == static_cast<long long>(weights.plan().regions.size()));
    for (const TensorHandle& t : weights.tensors()) CHECK((t.view || t.offset == 0));
    check_on_device(weights);
  }
  device.reset();
  check_clean();
}

TEST_CASE("xrt: user pointers the driver refuses are re-planned direct, with its words as the reason") {
  if (!have_sim()) return;
  test::TempDir dir;
  const fs::path model = write_synth(dir, 6 << 20, 8, 4096);
  const Manifest manifest = open_manifest(model);
  for (const char* refusing : {"file", "all"}) {
    CAPTURE(refusing);
    const SimSetting refuse("LWLOAD_XRT_SIM_REFUSE_USERPTR", refusing);
    const long long refused = sim_counter("userptr_refused");
    auto device = open_device("xrt:0");
    {
      const Weights weights = load(manifest, *device);
      const Plan& plan = weights.plan();
      CHECK(plan.count(Placement::zero_copy) == 0);
      CHECK(plan.count(Placement::direct) == 8);
      for (const TensorPlan& tp : plan.tensors) {
        INFO(tp.reason);
        CHECK(tp.reason.find("xrt::bo(user pointer) refused") != std::string::npos);
        CHECK(tp.reason.find(std::string(refusing) == "file"
                                 ? "cannot pin file-backed pages"
                                 : "user pointer buffers are not supported") != std::string::npos);
      }
      CHECK(sim_counter("userptr_refused") > refused);
      check_on_device(weights);
    }
    device.reset();
    check_clean();
  }
}

TEST_CASE("xrt: allocations the driver refuses fail the load cleanly and leak nothing") {
  if (!have_sim()) return;
  test::TempDir dir;
  const fs::path model = write_synth(dir, 4 << 20, 8, 0);
  const Manifest manifest = open_manifest(model);
  for (const auto force : {Placement::direct, Placement::staged}) {
    CAPTURE(placement_name(force));
    const SimSetting fail_after("LWLOAD_XRT_SIM_FAIL_ALLOC_AFTER", "3");
    auto device = open_device("xrt:0");
    LoadOptions options;
    options.plan.force = force;
    const Error refused = test::error_of([&] { (void)load(manifest, *device, options); });
    CHECK(refused.code() == ErrorCode::out_of_memory);
    CHECK(std::string(refused.what()).find("xrt_sim: out of memory") != std::string::npos);
    CHECK(std::string(refused.what()).find("xrt:0") != std::string::npos);
    device.reset();
    check_clean();
  }
}

TEST_CASE("xrt: lwload works on the application's xrt::device and leaves it working") {
  if (!have_sim()) return;
  const ::xrt::device app(0u);
  test::TempDir dir;
  const fs::path model = write_synth(dir, 4 << 20, 6, 0);
  const Manifest manifest = open_manifest(model);
  for (const auto force : {std::optional<Placement>{}, std::optional{Placement::staged}}) {
    auto device = open_xrt_device(app);
    CHECK(device->info().id() == "xrt:0");
    LoadOptions options;
    options.plan.force = force;
    {
      const Weights weights = load(manifest, *device, options);
      for (const TensorHandle& t : weights.tensors()) {
        const auto on_xrt = xrt_tensor(t);
        REQUIRE(on_xrt.has_value());
        // The application's kernels would take this buffer object: on its device, at the tensor.
        CHECK(owner_of(on_xrt->bo.address() + on_xrt->offset) == app.get_handle().get());
        const auto expected = test::read_range(model, t.info->pieces[0].offset, t.bytes);
        CHECK((device_bytes(on_xrt->bo.address() + on_xrt->offset, t.bytes) == expected));
      }
      CHECK(verify(weights).tensors == manifest.tensors.size());
    }
  }
  check_clean();
  // The application's device still makes, fills and syncs buffers of its own.
  {
    ::xrt::bo own(app, 4096, ::xrt::bo::flags::host_only, 0);
    std::memset(own.map(), 0x5a, 4096);
    own.sync(XCL_BO_SYNC_BO_TO_DEVICE);
    CHECK(device_bytes(own.address() + 4095, 1)[0] == std::byte{0x5a});
    CHECK(sim_counter("live") == 1);
  }
  check_clean();
  CHECK(test::error_of([] { (void)open_xrt_device(::xrt::device()); }).code() == ErrorCode::usage);
}

TEST_CASE("xrt: the C constructor adopts an xrtDeviceHandle, which stays the application's") {
  if (!have_sim()) return;
  xrtDeviceHandle handle = xrtDeviceOpen(0);
  REQUIRE(handle != nullptr);
  lwload_error* err = nullptr;
  lwload_device* device = lwload_device_from_xrt(handle, &err);
  REQUIRE_MESSAGE(device != nullptr, (err ? lwload_error_message(err) : ""));
  CHECK(std::string(lwload_device_id(device)) == "xrt:0");
  test::TempDir dir;
  const fs::path model = write_synth(dir, 2 << 20, 4, 0);
  lwload_manifest* manifest = lwload_manifest_open(model.c_str(), &err);
  REQUIRE(manifest != nullptr);
  lwload_weights* weights = lwload_load(manifest, device, nullptr, &err);
  REQUIRE_MESSAGE(weights != nullptr, (err ? lwload_error_message(err) : ""));
  CHECK(lwload_weights_verify(weights, &err) == LWLOAD_OK);
  lwload_weights_free(weights);
  lwload_manifest_free(manifest);
  lwload_device_free(device);
  check_clean();
  // Still open: the application's to use and close.
  xrtBufferHandle bo = xrtBOAlloc(handle, 4096, XRT_BO_FLAGS_HOST_ONLY, 0);
  CHECK(bo != nullptr);
  CHECK(xrtBOFree(bo) == 0);
  CHECK(xrtDeviceClose(handle) == 0);
  CHECK(lwload_device_from_xrt(nullptr, &err) == nullptr);
  REQUIRE(err != nullptr);
  CHECK(lwload_error_status(err) == LWLOAD_USAGE);
  lwload_error_free(err);
  check_clean();
}

TEST_CASE("xrt: the checks every backend's suite runs") {
  if (!have_sim()) return;
  test::TempDir dir;
  CHECK(test::check_device_ranges(*open_device("xrt:0"), dir.path()) >= 1);
  test::check_verify_finds_changed_byte("xrt:0");
  test::check_truncation_after_load("xrt:0");
  test::check_device_budgets("xrt:0");
  check_clean();
}

TEST_CASE("xrt: lwload devices lists the simulated device; lwload load places, verifies on it") {
  if (!have_sim() || !test::have_exe()) return;
  std::string out;
  CHECK(test::run_lwload("devices", &out) == 0);
  CHECK(out.find("xrt:0") != std::string::npos);
  const fs::path model = test::testdata() / "gguf" / "tiny-llama-f32-f16-q8.gguf";
  REQUIRE(fs::exists(model));
  for (const char* placement : {"zero-copy", "direct", "staged"}) {
    CAPTURE(placement);
    out.clear();
    const int status =
        test::run_lwload(str("load '", model.string(), "' --device xrt:0 --verify --placement ", placement), &out);
    INFO(out);
    CHECK(status == 0);
  }
}
