// End to end on OpenCL (PoCL in CI): lwload::load with each placement on a real OpenCL runtime,
// verify() reading every tensor back, and kernels reading the loaded weights through their
// cl_mem + offset. Zero-copy must use the model file's own pages; a forced small max allocation
// splits imported regions; misaligned tensors go direct; staged loads run on the device forced
// discrete through a small ring of pinned slots.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "backends/opencl/bindings.hpp"
#include "lwload/lwload.hpp"
#include "lwload/opencl.hpp"
#include "support/budget_checks.hpp"
#include "support/verify_checks.hpp"
#include "support/truncation_checks.hpp"
#include "support/test_support.hpp"
#include "synth/synth.hpp"

using namespace lwload;

namespace {

constexpr std::uint64_t kSeed = 42;

bool have_opencl_device() {
  const auto backend = BackendRegistry::instance().find("opencl");
  return backend && !backend->devices().empty();
}

std::unique_ptr<Device> open_cl(const DeviceOverrides& overrides = {}) {
  REQUIRE_MESSAGE(have_opencl_device(), "no OpenCL device: install pocl-opencl-icd");
  return open_device("opencl:0", overrides);
}

std::filesystem::path synth_model(const test::TempDir& dir, std::uint64_t bytes, std::uint32_t tensors,
                                  std::uint64_t alignment) {
  const auto path = dir / "model.safetensors";
  synth::SynthSpec spec;
  spec.total_bytes = bytes;
  spec.tensor_count = tensors;
  spec.alignment = alignment;
  spec.seed = kSeed;
  synth::write_model(path, spec);
  return path;
}

std::vector<std::byte> expected(std::uint32_t tensor, std::uint64_t offset, std::size_t bytes) {
  std::vector<std::byte> out(bytes);
  synth::expected_bytes(kSeed, tensor, offset, out);
  return out;
}

// `dst[i] = src[offset + i]` on the device owning `src`, found through the handle alone.
std::vector<std::byte> kernel_copy(const TensorHandle& tensor, std::uint64_t within, std::size_t bytes) {
  REQUIRE(tensor.native.type == lwload::cl_mem_type());
  cl_mem src = static_cast<cl_mem>(tensor.native.handle);
  cl_context raw_context = nullptr;
  REQUIRE(clGetMemObjectInfo(src, CL_MEM_CONTEXT, sizeof raw_context, &raw_context, nullptr) == CL_SUCCESS);
  const cl::Context context(raw_context, true);
  const cl::Device device = context.getInfo<CL_CONTEXT_DEVICES>().at(0);
  cl::CommandQueue queue(context, device);
  cl::Program program(context, R"(
    __kernel void copy_bytes(__global const uchar* src, ulong offset, __global uchar* dst) {
      dst[get_global_id(0)] = src[offset + get_global_id(0)];
    })");
  REQUIRE(program.build({device}) == CL_SUCCESS);
  cl::Kernel kernel(program, "copy_bytes");
  cl::Buffer out(context, CL_MEM_WRITE_ONLY, bytes);
  REQUIRE(kernel.setArg(0, sizeof(cl_mem), &src) == CL_SUCCESS);
  REQUIRE(kernel.setArg(1, static_cast<cl_ulong>(tensor.offset + within)) == CL_SUCCESS);
  REQUIRE(kernel.setArg(2, out) == CL_SUCCESS);
  REQUIRE(queue.enqueueNDRangeKernel(kernel, cl::NullRange, cl::NDRange(bytes)) == CL_SUCCESS);
  std::vector<std::byte> result(bytes);
  REQUIRE(queue.enqueueReadBuffer(out, CL_TRUE, 0, bytes, result.data()) == CL_SUCCESS);
  return result;
}

// The path of the file mapped at `address` in this process (/proc/self/maps), or "".
std::string mapped_file_at(const void* address) {
  const auto a = reinterpret_cast<std::uintptr_t>(address);
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    std::uintptr_t begin = 0, end = 0;
    char dash = 0;
    std::istringstream in(line);
    in >> std::hex >> begin >> dash >> end;
    if (a < begin || a >= end) continue;
    const auto slash = line.find('/');
    return slash == std::string::npos ? "" : line.substr(slash);
  }
  return "";
}

// Checks every loaded tensor's bytes through a kernel (a slice) and through verify() (all).
void check_contents(const Weights& weights) {
  for (const TensorHandle& t : weights.tensors()) {
    REQUIRE(t.buffer);
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(t.bytes, 4096));
    CHECK(kernel_copy(t, t.bytes - n, n) == expected(static_cast<std::uint32_t>(t.index), t.bytes - n, n));
  }
  const VerifyReport report = verify(weights);
  CHECK(report.tensors == weights.tensors().size());
  CHECK(report.bytes == weights.manifest().total_bytes());
}

}  // namespace

TEST_CASE("load zero-copy on OpenCL: the device reads the model file's own pages") {
  test::TempDir dir;
  const auto path = synth_model(dir, 4 << 20, 8, 4096);
  const Manifest manifest = open_manifest(path);
  const auto device = open_cl();
  const Weights weights = load(manifest, *device);

  CHECK(weights.plan().count(Placement::zero_copy) == 8);
  for (const TensorHandle& t : weights.tensors()) {
    CHECK(t.placement == Placement::zero_copy);
    CHECK(t.mechanism == "use_host_ptr");
    REQUIRE(t.native.type == lwload::cl_mem_type());
    void* host_ptr = nullptr;
    REQUIRE(clGetMemObjectInfo(static_cast<cl_mem>(t.native.handle), CL_MEM_HOST_PTR, sizeof host_ptr, &host_ptr,
                               nullptr) == CL_SUCCESS);
    const std::byte* bytes = static_cast<const std::byte*>(host_ptr) + t.offset;
    // The buffer's memory is a mapping of the model file itself: no copy was made.
    CHECK(mapped_file_at(bytes) == std::filesystem::canonical(path).string());
    CHECK(std::memcmp(bytes, expected(static_cast<std::uint32_t>(t.index), 0, t.bytes).data(), t.bytes) == 0);
  }
  check_contents(weights);
}

TEST_CASE("load direct on OpenCL: host-visible buffers filled straight from the file") {
  test::TempDir dir;
  const auto path = synth_model(dir, 3 << 20, 6, 4096);
  const Manifest manifest = open_manifest(path);
  const auto device = open_cl();
  LoadOptions options;
  options.plan.force = Placement::direct;
  const Weights weights = load(manifest, *device, options);
  CHECK(weights.plan().count(Placement::direct) == 6);
  for (const TensorHandle& t : weights.tensors()) CHECK(t.mechanism == "host_visible");
  check_contents(weights);
}

TEST_CASE("load staged on OpenCL forced discrete: a small ring of pinned slots, reused") {
  test::TempDir dir;
  const auto path = synth_model(dir, 4 << 20, 5, 0);
  const Manifest manifest = open_manifest(path);
  const auto device = open_cl({.memory = MemoryModel::discrete, .max_alloc = {}, .import_host_ptr = {}});
  LoadOptions options;
  options.plan.staging_budget = 256 << 10;
  options.plan.staging_slots = 4;
  const Weights weights = load(manifest, *device, options);
  CHECK(weights.plan().count(Placement::staged) == 5);
  CHECK(weights.plan().staging_budget <= (256u << 10));
  // 4 MiB through 64 KiB slots: many more uploads than slots, so slots were reused.
  CHECK(weights.stats().uploads >= (4u << 20) / (64u << 10));
  CHECK(weights.stats().bytes_uploaded == manifest.total_bytes());
  for (const TensorHandle& t : weights.tensors()) CHECK(t.mechanism == "allocated");
  check_contents(weights);
}

TEST_CASE("a small forced max allocation splits zero-copy regions") {
  test::TempDir dir;
  const auto path = synth_model(dir, 4 << 20, 16, 4096);  // 16 × 256 KiB
  const Manifest manifest = open_manifest(path);
  const std::uint64_t max_alloc = 1 << 20;
  const auto device = open_cl({.memory = {}, .max_alloc = max_alloc, .import_host_ptr = {}});
  const Weights weights = load(manifest, *device);
  const Plan& plan = weights.plan();
  CHECK(plan.count(Placement::zero_copy) == 16);
  CHECK(plan.regions.size() >= 4);
  for (const ImportRegion& region : plan.regions) CHECK(region.length <= max_alloc);
  for (const TensorHandle& t : weights.tensors()) CHECK(t.buffer->size() <= max_alloc);
  check_contents(weights);
}

TEST_CASE("packed tensors are zero_copy on OpenCL: sub-buffers where aligned, else (buffer, offset)") {
  test::TempDir dir;
  const auto path = synth_model(dir, 1 << 20, 7, 0);  // packed: offsets fall anywhere
  const Manifest manifest = open_manifest(path);
  const auto device = open_cl();
  const std::uint64_t base_align = device->info().caps.sub_buffer_alignment;
  const Weights weights = load(manifest, *device);
  CHECK(weights.plan().count(Placement::zero_copy) == 7);
  std::size_t views = 0, offsets = 0;
  for (const TensorHandle& t : weights.tensors()) {
    CHECK(t.placement == Placement::zero_copy);
    const TensorPlan& tp = weights.plan().tensors[t.index];
    if (t.view) {
      ++views;
      CHECK(t.offset == 0);
      CHECK(tp.region_offset % base_align == 0);
      CHECK(t.buffer->size() == t.bytes);
    } else {
      offsets += t.offset != 0;
      CHECK(t.offset == tp.region_offset);
      CHECK((t.offset == 0 || t.offset % base_align != 0));
    }
  }
  CHECK(views + offsets + 1 >= 7);  // all but a tensor at the region's start carry one or the other
  CHECK(offsets >= 1);              // packed offsets are mostly not base-address aligned
  check_contents(weights);
}

TEST_CASE("every real file in testdata loads zero_copy on OpenCL and verifies") {
  const auto device = open_cl();
  const auto models = test::real_model_files();
  CHECK(models.size() >= 15);
  for (const auto& path : models) {
    CAPTURE(path.string());
    const Manifest manifest = open_manifest(path);
    const Weights weights = load(manifest, *device);
    CHECK(weights.plan().count(Placement::zero_copy) ==
          weights.plan().tensors.size() - weights.plan().count(Placement::skipped));
    CHECK(verify(weights).tensors == weights.plan().count(Placement::zero_copy));
  }
}

TEST_CASE("sparse TFLite tensors on OpenCL: stored values and densified, equal to the independent reader's") {
  const auto device = open_cl();
  const auto model = test::testdata() / "tflite" / "face_detection_full_range_sparse.tflite";
  for (const bool densify : {false, true}) {
    CAPTURE(densify);
    OpenOptions options;
    options.densify = densify;
    const Manifest manifest = open_manifest(model, options);
    const Weights weights = load(manifest, *device);
    CHECK(test::check_against_reference(model, "tflite", manifest, weights, densify ? "--densify" : "") == 188);
    CHECK(verify(weights).tensors == 188);
  }
}

TEST_CASE("a file truncated after a zero_copy load on OpenCL: verify and read-back are errors, never a SIGBUS") {
  // A driver read of the imported pages (PoCL reads on a worker thread) would die on the lost
  // pages; read-back copies them itself through the guarded copy.
  const auto device = open_cl();
  test::TempDir dir;
  const auto path = synth_model(dir, 4 << 20, 4, 4096);
  const Manifest manifest = open_manifest(path);
  const Weights weights = load(manifest, *device);
  REQUIRE(weights.plan().count(Placement::zero_copy) == 4);
  CHECK(verify(weights).tensors == 4);  // intact: the same bytes, read without the driver
  std::filesystem::resize_file(path, 4096);
  const Error changed = test::error_of([&] { (void)verify(weights); });
  CHECK(changed.code() == ErrorCode::io);
  CHECK(std::string(changed.what()).find("changed since it was loaded") != std::string::npos);
  const TensorHandle& last = weights.tensors().back();
  std::vector<std::byte> buffer(last.bytes);
  const Error lost = test::error_of([&] { weights.read_back(last, 0, buffer); });
  CHECK(lost.code() == ErrorCode::io);
  CHECK(std::string(lost.what()).find("shorter than when it was mapped") != std::string::npos);
  CHECK(std::string(lost.what()).find("tensor '" + last.info->name + "'") != std::string::npos);
}

TEST_CASE("a model at an odd offset of a container (fd) and in memory, on OpenCL: kernels read the right bytes") {
  test::TempDir dir;
  const auto path = synth_model(dir, 2 << 20, 6, 0);
  const auto model = test::read_file(path);
  constexpr std::size_t kPrefix = 4099;
  std::vector<std::byte> container(kPrefix + model.size() + 777, std::byte{0xee});
  std::copy(model.begin(), model.end(), container.begin() + kPrefix);
  test::write_file(dir / "app.apk", container);
  const auto device = open_cl();
  const int fd = ::open((dir / "app.apk").c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  const Manifest from_fd = open_manifest_fd(fd, kPrefix, model.size());
  ::close(fd);
  const Weights w = load(from_fd, *device);
  CHECK(w.plan().count(Placement::zero_copy) == 6);  // regions cover the container's own pages
  check_contents(w);
  // Memory: zero-copy where the driver takes the caller's pointer, else direct with the reason.
  const Manifest from_memory = open_manifest_memory(model);
  const Weights m = load(from_memory, *device);
  MESSAGE(m.plan().count(Placement::zero_copy), " of 6 zero_copy from memory");
  check_contents(m);
}

TEST_CASE("budgets on OpenCL: too little free refused with the numbers; regions past the import limit load direct") {
  test::check_device_budgets("opencl:0");
}

TEST_CASE("a byte changed in OpenCL device memory fails verify, naming the tensor and the offset") {
  test::check_verify_finds_changed_byte("opencl:0");
}

TEST_CASE(
    "a file truncated after a zero-copy load, the application's SIGBUS handler installed: errors, never a signal") {
  test::check_truncation_after_load("opencl:0");
}

TEST_CASE("a tensor larger than the forced max allocation fails before anything is allocated") {
  test::TempDir dir;
  const auto path = synth_model(dir, 4 << 20, 2, 0);  // 2 MiB tensors
  const Manifest manifest = open_manifest(path);
  const auto device = open_cl({.memory = MemoryModel::discrete, .max_alloc = 1 << 20, .import_host_ptr = {}});
  try {
    (void)load(manifest, *device);
    FAIL("loading a 2 MiB tensor with a 1 MiB max allocation succeeded");
  } catch (const Error& error) {
    CHECK(error.code() == ErrorCode::does_not_fit);
    CHECK(std::string(error.what()).find("1048576") != std::string::npos);
  }
}

TEST_CASE("lwload devices / load --verify on OpenCL through the CLI") {
  const char* exe = std::getenv("LWLOAD_EXE");
  if (!exe) {
    (void)lwload::test::have_exe();  // reports the skip; a failure under LWLOAD_REQUIRE=exe
    return;
  }
  REQUIRE(have_opencl_device());
  std::string out;
  CHECK(test::run_command(str(exe, " devices"), &out) == 0);
  CHECK(out.find("opencl:0") != std::string::npos);
  CHECK(out.find("base_addr_align") != std::string::npos);
  CHECK(out.find("extensions") != std::string::npos);

  test::TempDir dir;
  const auto aligned = synth_model(dir, 2 << 20, 4, 4096);
  for (const std::string extra : {"", " --placement direct", " --memory discrete --budget 256KiB"}) {
    CAPTURE(extra);
    out.clear();
    CHECK(test::run_command(str(exe, " load ", aligned.string(), " --device opencl:0 --verify", extra, " 2>&1"),
                            &out) == 0);
    CHECK(out.find("verify: ok, 4 tensors") != std::string::npos);
  }
}

TEST_CASE("opencl: the application's own context and queue (lwload/opencl.hpp)") {
  if (!lwload::test::available("opencl", have_opencl_device(), "no OpenCL device (install pocl-opencl-icd)")) return;
  // opencl:0, found the way an application would: the first device of the first platform.
  cl::Device cl_device;
  std::vector<cl::Platform> platforms;
  cl::Platform::get(&platforms);
  for (const cl::Platform& platform : platforms) {
    std::vector<cl::Device> devices;
    if (platform.getDevices(CL_DEVICE_TYPE_ALL, &devices) == CL_SUCCESS && !devices.empty()) {
      cl_device = devices.front();
      break;
    }
  }
  REQUIRE(cl_device() != nullptr);
  cl_int status = CL_SUCCESS;
  const cl::Context app_context(cl_device, nullptr, nullptr, nullptr, &status);
  REQUIRE(status == CL_SUCCESS);
  const cl::CommandQueue in_order(app_context, cl_device, cl::QueueProperties::None, &status);
  REQUIRE(status == CL_SUCCESS);
  const auto references = [&] { return app_context.getInfo<CL_CONTEXT_REFERENCE_COUNT>(); };
  const cl_uint before = references();

  test::TempDir dir;
  const Manifest manifest = open_manifest(synth_model(dir, 4 << 20, 6, 0));
  for (const auto placement : {Placement::zero_copy, Placement::direct}) {
    auto device = open_opencl_device(app_context(), cl_device(), in_order());
    CHECK(device->info().backend == "opencl");
    LoadOptions options;
    options.plan.force = placement;
    const Weights weights = load(manifest, *device, options);
    for (const TensorHandle& t : weights.tensors()) {
      const auto in_cl = opencl_tensor(t);
      REQUIRE(in_cl.has_value());
      cl_context owner = nullptr;
      REQUIRE(clGetMemObjectInfo(in_cl->mem, CL_MEM_CONTEXT, sizeof owner, &owner, nullptr) == CL_SUCCESS);
      CHECK(owner == app_context());  // made in the application's context, usable by its kernels
      CHECK(kernel_copy(t, 0, 64) == expected(static_cast<std::uint32_t>(t.index), 0, 64));
    }
    CHECK(verify(weights).tensors == manifest.tensors.size());
  }
  CHECK(references() == before);  // lwload dropped exactly the references it took

  // Misuse: a queue of another context, and a context without the device.
  const cl::Context other_context(cl_device, nullptr, nullptr, nullptr, &status);
  const cl::CommandQueue other_queue(other_context, cl_device, cl::QueueProperties::None, &status);
  const Error wrong_queue =
      test::error_of([&] { (void)open_opencl_device(app_context(), cl_device(), other_queue()); });
  CHECK(wrong_queue.code() == ErrorCode::usage);
  CHECK(std::string(wrong_queue.what()).find("another context") != std::string::npos);
  CHECK(test::error_of([&] { (void)open_opencl_device(nullptr, cl_device()); }).code() == ErrorCode::usage);
}
