// The cuda backend without NVIDIA hardware: each case runs in a child process whose libcuda.so.1
// is the simulated driver (tests/cuda_sim, a test double), configured as an integrated device with
// and without read-only host registration or as a discrete one, with faults injected by
// environment knobs. Every placement loads and verifies; failures are clean and leak nothing.
#include <doctest/doctest.h>
#include <dlfcn.h>

#include <filesystem>
#include <iostream>
#include <string>

#include "lwload/backend.hpp"
#include "lwload/cuda.hpp"
#include "lwload/error.hpp"
#include "lwload/loader.hpp"
#include "support/budget_checks.hpp"
#include "support/verify_checks.hpp"
#include "support/range_checks.hpp"
#include "support/truncation_checks.hpp"
#include "support/test_support.hpp"
#include "synth/synth.hpp"

namespace fs = std::filesystem;
using namespace lwload;

namespace {

fs::path self_exe() { return fs::read_symlink("/proc/self/exe"); }
fs::path sim_library() { return self_exe().parent_path() / "cuda_sim" / "libcuda.so.1"; }

// ---- parent side ----

void expect_child(const std::string& mode, const std::string& test_case, const std::string& extra_env = {}) {
  INFO("mode " << mode << ", child '" << test_case << "' " << extra_env);
  std::string output;
  const int status = test::run_command("env LWLOAD_CUDA_LIBRARY='" + sim_library().string() +
                                           "' LWLOAD_CUDA_SIM=" + mode + " " + extra_env + " '" + self_exe().string() +
                                           "' --no-skip --no-colors -tc='" + test_case + "' 2>&1",
                                       &output);
  INFO(output);
  CHECK(status == 0);
  CHECK(output.find("CUDA-CHILD-OK " + test_case) != std::string::npos);
}

// ---- child side ----

void child_ok(const std::string& name) { std::cout << "CUDA-CHILD-OK " << name << std::endl; }

// What the simulated driver still holds: allocations, registrations, streams, events, contexts.
long sim_live() {
  void* lib = dlopen(sim_library().c_str(), RTLD_NOW | RTLD_NOLOAD);
  REQUIRE_MESSAGE(lib != nullptr, "the simulated driver is not loaded in this process");
  auto live = reinterpret_cast<long (*)()>(dlsym(lib, "lwload_cuda_sim_live"));
  const bool found = live != nullptr;
  REQUIRE(found);
  const long n = live();
  dlclose(lib);
  return n;
}

fs::path write_synth(const test::TempDir& dir, const std::string& format, std::uint64_t alignment) {
  synth::SynthSpec spec;
  spec.format = format;
  spec.total_bytes = 12 << 20;
  spec.tensor_count = 6;
  spec.alignment = alignment;
  const fs::path path = dir / ("model." + format);
  synth::write_model(path, spec);
  return path;
}

std::string mode() {
  const char* m = std::getenv("LWLOAD_CUDA_SIM");
  return m ? m : "";
}

// Loads with `plan`, checks placement and mechanism of every tensor, verifies every byte.
void load_and_verify(const fs::path& model, const PlanOptions& plan, Placement placement, std::string_view mechanism) {
  const Manifest manifest = open_manifest(model);
  {
    auto device = open_device("cuda:0");
    LoadOptions options;
    options.plan = plan;
    options.plan.staging_budget = 1 << 20;  // 4 slots of 256 KiB: slots are reused
    const Weights weights = load(manifest, *device, options);
    for (const TensorHandle& t : weights.tensors()) {
      INFO(t.info->name << ": " << placement_name(t.placement) << " via " << t.mechanism << " — "
                        << weights.plan().tensors[t.index].reason);
      CHECK(t.placement == placement);
      CHECK(t.mechanism == mechanism);
      CHECK(t.native.type == lwload::cu_deviceptr_type());
    }
    CHECK(verify(weights).tensors == manifest.tensors.size());
  }
  CHECK(sim_live() == 0);  // device and weights gone: nothing left in the driver
}

using test::error_of;

}  // namespace

TEST_CASE("cuda child: discovery" * doctest::skip()) {
  const auto devices = BackendRegistry::instance().find("cuda")->devices();
  REQUIRE(devices.size() == 1);
  const DeviceInfo& d = devices[0];
  CHECK(d.id() == "cuda:0");
  CHECK(d.kind == (mode() == "dgpu" ? DeviceKind::dgpu : DeviceKind::igpu));
  CHECK(d.memory == (mode() == "dgpu" ? MemoryModel::discrete : MemoryModel::unified));
  CHECK(d.caps.import_host_ptr == (mode() == "igpu-ro"));
  CHECK(d.caps.device_memory == 8ull << 30);
  child_ok("cuda child: discovery");
}

TEST_CASE("cuda child: every placement loads and verifies" * doctest::skip()) {
  test::TempDir dir;
  const std::string m = mode();
  const bool refused = std::getenv("LWLOAD_CUDA_SIM_REFUSE_REGISTER") != nullptr;
  const Placement automatic = m == "dgpu"                    ? Placement::staged
                              : (m == "igpu-ro" && !refused) ? Placement::zero_copy
                                                             : Placement::direct;
  const std::string_view mechanism = automatic == Placement::zero_copy ? "cuda_host_register"
                                     : automatic == Placement::direct  ? "host_visible"
                                                                       : "allocated";
  // Packed safetensors and a GGUF at llama.cpp's 32-byte alignment: real files' layouts.
  for (const auto& model : {write_synth(dir, "safetensors", 0), write_synth(dir, "gguf", 32)}) {
    CAPTURE(model.string());
    load_and_verify(model, {}, automatic, mechanism);
    PlanOptions staged;
    staged.force = Placement::staged;
    load_and_verify(model, staged, Placement::staged, "allocated");
  }
  child_ok("cuda child: every placement loads and verifies");
}

TEST_CASE("cuda child: a refused registration falls back to direct with the driver reason" * doctest::skip()) {
  test::TempDir dir;
  const Manifest manifest = open_manifest(write_synth(dir, "safetensors", 0));
  {
    auto device = open_device("cuda:0");
    const Weights weights = load(manifest, *device);
    CHECK(weights.plan().count(Placement::direct) == manifest.tensors.size());
    CHECK(weights.plan().tensors[0].reason.find("cuMemHostRegister(READ_ONLY | DEVICEMAP) refused") !=
          std::string::npos);
    CHECK(weights.plan().tensors[0].reason.find("CUDA_ERROR_INVALID_VALUE") != std::string::npos);
    CHECK(verify(weights).tensors == manifest.tensors.size());
  }
  CHECK(sim_live() == 0);
  child_ok("cuda child: a refused registration falls back to direct with the driver reason");
}

TEST_CASE("cuda child: host registration pins; past free memory it falls back to direct" * doctest::skip()) {
  test::TempDir dir;
  const Manifest manifest = open_manifest(write_synth(dir, "safetensors", 0));
  DeviceOverrides small_regions;  // one 2 MiB tensor per region, so some fit and the rest fall back
  small_regions.max_alloc = (2 << 20) + (64 << 10);
  {
    auto device = open_device("cuda:0", small_regions);
    CHECK(device->info().caps.import_pins == Pinning::yes);
    LoadOptions options;
    options.plan.machine = MachineMemory{};
    options.plan.machine->mem_total = options.plan.machine->mem_available = 5 << 20;
    const Weights weights = load(manifest, *device, options);
    const Plan& plan = weights.plan();
    CHECK(plan.count(Placement::zero_copy) > 0);
    CHECK(plan.count(Placement::direct) > 0);
    CHECK(plan.host.pinned_imports <= (5u << 20));
    for (const TensorPlan& tp : plan.tensors)
      if (tp.placement == Placement::direct) CHECK(tp.reason.find("imports pin memory") != std::string::npos);
    CHECK(verify(weights).tensors == manifest.tensors.size());
  }
  CHECK(sim_live() == 0);
  child_ok("cuda child: host registration pins; past free memory it falls back to direct");
}

TEST_CASE("cuda child: injected faults fail cleanly and leak nothing" * doctest::skip()) {
  test::TempDir dir;
  const Manifest manifest = open_manifest(write_synth(dir, "safetensors", 0));
  const bool copy_fault = std::getenv("LWLOAD_CUDA_SIM_FAIL_COPY_AT") != nullptr;
  {
    auto device = open_device("cuda:0");
    LoadOptions options;
    options.plan.staging_budget = 1 << 20;
    const Error e = error_of([&] { (void)load(manifest, *device, options); });
    MESSAGE(e.what());
    CHECK(e.code() == (copy_fault ? ErrorCode::device : ErrorCode::out_of_memory));
    CHECK(std::string(e.what()).find(copy_fault ? "cuMemcpyHtoDAsync" : "CUDA_ERROR_OUT_OF_MEMORY") !=
          std::string::npos);
  }
  CHECK(sim_live() == 0);
  child_ok("cuda child: injected faults fail cleanly and leak nothing");
}

TEST_CASE("cuda child: ranges" * doctest::skip()) {
  test::TempDir dir;
  // device-local; host-visible on every mode; registered file pages on igpu-ro.
  CHECK(test::check_device_ranges(*open_device("cuda:0"), dir.path()) == (mode() == "igpu-ro" ? 3 : 2));
  CHECK(sim_live() == 0);
  child_ok("cuda child: ranges");
}

TEST_CASE("cuda child: truncated after load" * doctest::skip()) {
  test::check_truncation_after_load("cuda:0");
  CHECK(sim_live() == 0);
  child_ok("cuda child: truncated after load");
}

TEST_CASE("cuda child: budgets" * doctest::skip()) {
  test::check_device_budgets("cuda:0");
  // What cuMemGetInfo reports free (other processes hold 7.5 of the 8 GiB) is what the plan uses.
  if (std::getenv("LWLOAD_CUDA_SIM_USED_BY_OTHERS")) {
    const auto device = open_device("cuda:0");
    CHECK(device->info().caps.memory_available == (512ull << 20));
  }
  CHECK(sim_live() == 0);
  child_ok("cuda child: budgets");
}

TEST_CASE("cuda child: a changed device byte" * doctest::skip()) {
  test::check_verify_finds_changed_byte("cuda:0");
  CHECK(sim_live() == 0);
  child_ok("cuda child: a changed device byte");
}

TEST_CASE("cuda: no driver means no device, and lwload devices says why") {
  if (!test::available("cuda_sim", fs::exists(sim_library()), "simulated CUDA driver not built")) return;
  std::string out;
  const char* exe = std::getenv("LWLOAD_EXE");
  if (exe) {
    CHECK(test::run_command(std::string("env LWLOAD_CUDA_LIBRARY=/nonexistent/libcuda.so.1 ") + exe + " devices",
                            &out) == 0);
    CHECK(out.find("cuda: no device: no NVIDIA driver") != std::string::npos);
    out.clear();
    CHECK(test::run_command("env LWLOAD_CUDA_LIBRARY='" + sim_library().string() + "' " + exe + " devices", &out) == 0);
    CHECK(out.find("cuda: no device: cuInit failed: CUDA_ERROR_NO_DEVICE") != std::string::npos);  // no mode set
    out.clear();
    CHECK(test::run_command(
              "env LWLOAD_CUDA_LIBRARY='" + sim_library().string() + "' LWLOAD_CUDA_SIM=dgpu " + exe + " devices",
              &out) == 0);
    CHECK(out.find("cuda:0  lwload simulated CUDA device (dgpu)") != std::string::npos);
  }
}

TEST_CASE("cuda: the simulated devices load every placement and verify") {
  if (!test::available("cuda_sim", fs::exists(sim_library()), "simulated CUDA driver not built")) return;
  for (const std::string m : {"igpu-ro", "igpu", "dgpu"}) {
    expect_child(m, "cuda child: discovery");
    expect_child(m, "cuda child: every placement loads and verifies");
    expect_child(m, "cuda child: budgets");
    expect_child(m, "cuda child: truncated after load");
    expect_child(m, "cuda child: ranges");
    expect_child(m, "cuda child: a changed device byte");
  }
  expect_child("dgpu", "cuda child: budgets", "LWLOAD_CUDA_SIM_USED_BY_OTHERS=" + std::to_string((15ull << 30) / 2));
  expect_child("igpu-ro", "cuda child: every placement loads and verifies", "LWLOAD_CUDA_SIM_REFUSE_REGISTER=1");
  expect_child("igpu-ro", "cuda child: a refused registration falls back to direct with the driver reason",
               "LWLOAD_CUDA_SIM_REFUSE_REGISTER=1");
  expect_child("igpu-ro", "cuda child: host registration pins; past free memory it falls back to direct");
}

TEST_CASE("cuda: allocation and copy failures release everything") {
  if (!test::available("cuda_sim", fs::exists(sim_library()), "simulated CUDA driver not built")) return;
  expect_child("dgpu", "cuda child: injected faults fail cleanly and leak nothing",
               "LWLOAD_CUDA_SIM_FAIL_ALLOC_AFTER=3");
  expect_child("igpu", "cuda child: injected faults fail cleanly and leak nothing",
               "LWLOAD_CUDA_SIM_FAIL_ALLOC_AFTER=2");
  expect_child("dgpu", "cuda child: injected faults fail cleanly and leak nothing", "LWLOAD_CUDA_SIM_FAIL_COPY_AT=5");
}

TEST_CASE("cuda child: a registration the driver has no memory for fails the load and is not declined" *
          doctest::skip()) {
  // CUDA_ERROR_OUT_OF_MEMORY from cuMemHostRegister is the machine out of pinnable memory, not
  // these pages refused: the load stops with out_of_memory and the driver's words, leaking nothing.
  test::TempDir dir;
  const Manifest manifest = open_manifest(write_synth(dir, "safetensors", 0));
  {
    auto device = open_device("cuda:0");
    REQUIRE(make_plan(manifest, device->info()).count(Placement::zero_copy) > 0);
    const Error e = error_of([&] { (void)load(manifest, *device); });
    MESSAGE(e.what());
    CHECK(e.code() == ErrorCode::out_of_memory);
    CHECK(std::string(e.what()).find("cuMemHostRegister") != std::string::npos);
    CHECK(std::string(e.what()).find("CUDA_ERROR_OUT_OF_MEMORY") != std::string::npos);
  }
  CHECK(sim_live() == 0);
  child_ok("cuda child: a registration the driver has no memory for fails the load and is not declined");
}

TEST_CASE("cuda: cuMemHostRegister out of memory fails the load with out_of_memory; other refusals fall back") {
  if (!test::available("cuda_sim", fs::exists(sim_library()), "simulated CUDA driver not built")) return;
  expect_child("igpu-ro", "cuda child: a registration the driver has no memory for fails the load and is not declined",
               "LWLOAD_CUDA_SIM_REGISTER_OUT_OF_MEMORY=1");
}
