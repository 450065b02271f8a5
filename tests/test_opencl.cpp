// The OpenCL backend on a real runtime (PoCL in CI: a CPU device with unified memory): discovery
// facts cross-checked against the API, zero-copy imports of mapped file pages, host-visible
// (direct) buffers, pinned staging with asynchronous uploads on a device forced discrete, limits
// and out-of-memory, and OpenCL kernels reading what was loaded. Every device-level test goes
// through lwload's public Device interface and reaches OpenCL only through the native handles,
// as an application would.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <numeric>

#include "backends/opencl/bindings.hpp"
#include "backends/opencl/check.hpp"
#include "backends/opencl/memory_account.hpp"
#include "io/mmap_mapping.hpp"
#include "lwload/backend.hpp"
#include "lwload/error.hpp"
#include "lwload/file_system.hpp"
#include "lwload/opencl.hpp"
#include "support/range_checks.hpp"
#include "support/test_support.hpp"

using namespace lwload;

namespace {

std::vector<std::byte> pattern_bytes(std::size_t n, std::uint32_t seed) {
  std::vector<std::byte> bytes(n);
  std::uint32_t x = seed * 2654435761u + 1;
  for (auto& b : bytes) {
    x = x * 1664525u + 1013904223u;
    b = static_cast<std::byte>(x >> 24);
  }
  return bytes;
}

bool have_opencl_device() {
  const auto backend = BackendRegistry::instance().find("opencl");
  return backend && !backend->devices().empty();
}

std::unique_ptr<Device> open_cl(const DeviceOverrides& overrides = {}) {
  REQUIRE_MESSAGE(have_opencl_device(), "no OpenCL device: install pocl-opencl-icd");
  return open_device("opencl:0", overrides);
}

cl_device_id first_cl_device() {
  cl_platform_id platform = nullptr;
  REQUIRE(clGetPlatformIDs(1, &platform, nullptr) == CL_SUCCESS);
  cl_device_id device = nullptr;
  REQUIRE(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, nullptr) == CL_SUCCESS);
  return device;
}

cl_mem as_mem(const DeviceBuffer& buffer) {
  const NativeHandle native = buffer.native();
  REQUIRE(native.type == lwload::cl_mem_type());
  return static_cast<cl_mem>(native.handle);
}

// Runs `dst[i] = src[offset + i]` on the device that owns `src` (found through the cl_mem's own
// context, as an application holding only the native handle would) and returns dst.
std::vector<std::byte> kernel_copy(cl_mem src, std::uint64_t offset, std::size_t bytes) {
  cl_context raw_context = nullptr;
  REQUIRE(clGetMemObjectInfo(src, CL_MEM_CONTEXT, sizeof raw_context, &raw_context, nullptr) == CL_SUCCESS);
  const cl::Context context(raw_context, true);
  const cl::Device device = context.getInfo<CL_CONTEXT_DEVICES>().at(0);
  cl::CommandQueue queue(context, device);
  const char* source = R"(
    __kernel void copy_bytes(__global const uchar* src, ulong offset, __global uchar* dst) {
      size_t i = get_global_id(0);
      dst[i] = src[offset + i];
    })";
  cl::Program program(context, source);
  REQUIRE(program.build({device}) == CL_SUCCESS);
  cl_int status = CL_SUCCESS;
  cl::Kernel kernel(program, "copy_bytes", &status);
  REQUIRE(status == CL_SUCCESS);
  cl::Buffer out(context, CL_MEM_WRITE_ONLY, bytes, nullptr, &status);
  REQUIRE(status == CL_SUCCESS);
  REQUIRE(kernel.setArg(0, sizeof(cl_mem), &src) == CL_SUCCESS);
  REQUIRE(kernel.setArg(1, static_cast<cl_ulong>(offset)) == CL_SUCCESS);
  REQUIRE(kernel.setArg(2, out) == CL_SUCCESS);
  REQUIRE(queue.enqueueNDRangeKernel(kernel, cl::NullRange, cl::NDRange(bytes)) == CL_SUCCESS);
  std::vector<std::byte> result(bytes);
  REQUIRE(queue.enqueueReadBuffer(out, CL_TRUE, 0, bytes, result.data()) == CL_SUCCESS);
  return result;
}

std::vector<std::byte> read_back(DeviceBuffer& buffer, std::uint64_t offset, std::size_t bytes) {
  std::vector<std::byte> out(bytes);
  buffer.read_back(offset, out);
  return out;
}

ErrorCode error_code_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const Error& error) {
    return error.code();
  }
  FAIL("no lwload::Error thrown");
  return ErrorCode::usage;
}

// A file of `bytes` pattern bytes and a read-only mapping of all of it.
struct MappedTestFile {
  test::TempDir dir;
  std::filesystem::path path = dir / "weights.bin";
  std::vector<std::byte> bytes;
  std::shared_ptr<MmapMapping> region;

  explicit MappedTestFile(std::size_t size, std::uint32_t seed = 7) : bytes(pattern_bytes(size, seed)) {
    test::write_file(path, bytes);
    const auto file = posix_file_system()->open(path);
    region = MmapMapping::map(*file, 0, size);
  }
};

}  // namespace

TEST_CASE("discovery reports the OpenCL device with the facts the API gives") {
  REQUIRE_MESSAGE(have_opencl_device(), "no OpenCL device: install pocl-opencl-icd");
  const auto devices = BackendRegistry::instance().find("opencl")->devices();
  const DeviceInfo& info = devices.at(0);
  CHECK(info.backend == "opencl");
  CHECK(info.index == 0);
  CHECK(info.id() == "opencl:0");
  for (std::size_t i = 0; i < devices.size(); ++i) CHECK(devices[i].index == i);

  const cl::Device device(first_cl_device());
  CHECK(info.name == device.getInfo<CL_DEVICE_NAME>());
  CHECK(info.caps.max_alloc == device.getInfo<CL_DEVICE_MAX_MEM_ALLOC_SIZE>());
  CHECK(info.caps.device_memory == device.getInfo<CL_DEVICE_GLOBAL_MEM_SIZE>());
  // CL_DEVICE_MEM_BASE_ADDR_ALIGN is in bits; lwload's alignments are bytes.
  CHECK(info.caps.sub_buffer_alignment == device.getInfo<CL_DEVICE_MEM_BASE_ADDR_ALIGN>() / 8);
  CHECK(info.caps.import_alignment % 4096 == 0);
  CHECK(info.caps.pinned_staging);

  cl_bool unified = CL_FALSE;
  REQUIRE(clGetDeviceInfo(device(), CL_DEVICE_HOST_UNIFIED_MEMORY, sizeof unified, &unified, nullptr) == CL_SUCCESS);
  CHECK((info.memory == MemoryModel::unified) == (unified == CL_TRUE));
  const auto type = device.getInfo<CL_DEVICE_TYPE>();
  if (type & CL_DEVICE_TYPE_CPU) CHECK(info.kind == DeviceKind::cpu);
  if (type & CL_DEVICE_TYPE_GPU) CHECK(info.kind == (unified ? DeviceKind::igpu : DeviceKind::dgpu));
  if (unified) {
    CHECK(info.caps.import_host_ptr);
    CHECK(info.caps.host_visible_alloc);
  }

  const auto detail = [&](std::string_view key) {
    for (const auto& [k, v] : info.details)
      if (k == key) return v;
    FAIL("no detail '", key, "'");
    return std::string();
  };
  CHECK(detail("extensions") == device.getInfo<CL_DEVICE_EXTENSIONS>());
  CHECK(detail("base_addr_align").find("bits") != std::string::npos);
  CHECK(detail("platform").size() > 0);
  if (unified) CHECK(detail("import").find("use_host_ptr") != std::string::npos);

  // The registry lists it too, and "auto" never fails while a device exists.
  const auto all = list_devices();
  CHECK(std::any_of(all.begin(), all.end(), [](const DeviceInfo& d) { return d.id() == "opencl:0"; }));
  CHECK(error_code_of([] { open_device("opencl:99"); }) == ErrorCode::usage);
}

TEST_CASE("overrides: forced discrete disables imports and host-visible memory; max_alloc shrinks") {
  const auto discrete = open_cl({.memory = MemoryModel::discrete, .max_alloc = 1 << 20, .import_host_ptr = {}});
  CHECK(discrete->info().memory == MemoryModel::discrete);
  CHECK_FALSE(discrete->info().caps.import_host_ptr);
  CHECK_FALSE(discrete->info().caps.host_visible_alloc);
  CHECK(discrete->info().caps.max_alloc == 1u << 20);

  MappedTestFile file(8192);
  CHECK(discrete->import_host(file.region->bytes()).buffer == nullptr);
  CHECK(error_code_of([&] { discrete->allocate(4096, MemoryPlace::host_visible); }) == ErrorCode::usage);

  const auto no_import = open_cl({.memory = {}, .max_alloc = {}, .import_host_ptr = false});
  CHECK(no_import->info().memory == MemoryModel::unified);
  CHECK_FALSE(no_import->info().caps.import_host_ptr);
  CHECK(no_import->import_host(file.region->bytes()).buffer == nullptr);
}

TEST_CASE("zero-copy: USE_HOST_PTR import uses the mapped file pages themselves") {
  const auto device = open_cl();
  REQUIRE(device->info().caps.import_host_ptr);
  const std::size_t size = 3 * 4096 + 1000;  // not a page multiple: the tail page is partial
  MappedTestFile file(size);
  const auto range = file.region->bytes();
  REQUIRE(reinterpret_cast<std::uintptr_t>(range.data()) % 4096 == 0);

  auto buffer = device->import_host(range).buffer;
  REQUIRE(buffer);
  CHECK(buffer->mechanism() == "use_host_ptr");
  CHECK(buffer->size() == size);
  const cl_mem mem = as_mem(*buffer);

  // The driver keeps our pointer, and mapping the buffer hands back the very file pages.
  void* host_ptr = nullptr;
  REQUIRE(clGetMemObjectInfo(mem, CL_MEM_HOST_PTR, sizeof host_ptr, &host_ptr, nullptr) == CL_SUCCESS);
  CHECK(host_ptr == range.data());
  cl_context raw_context = nullptr;
  REQUIRE(clGetMemObjectInfo(mem, CL_MEM_CONTEXT, sizeof raw_context, &raw_context, nullptr) == CL_SUCCESS);
  const cl::Context context(raw_context, true);
  cl::CommandQueue queue(context, context.getInfo<CL_CONTEXT_DEVICES>().at(0));
  cl_int status = CL_SUCCESS;
  void* mapped =
      queue.enqueueMapBuffer(cl::Buffer(mem, true), CL_TRUE, CL_MAP_READ, 0, size, nullptr, nullptr, &status);
  REQUIRE(status == CL_SUCCESS);
  CHECK(mapped == range.data());
  REQUIRE(queue.enqueueUnmapMemObject(cl::Buffer(mem, true), mapped) == CL_SUCCESS);
  REQUIRE(queue.finish() == CL_SUCCESS);

  CHECK(read_back(*buffer, 0, size) == file.bytes);
  CHECK(read_back(*buffer, 5000, 100) == test::slice(file.bytes, 5000, 100));
  // A kernel reads the weights straight out of the file mapping, at an unaligned offset too.
  CHECK(kernel_copy(mem, 4097, 3000) == test::slice(file.bytes, 4097, 3000));
  CHECK(error_code_of([&] { read_back(*buffer, size - 10, 11); }) == ErrorCode::usage);
}

TEST_CASE("zero-copy: views are sub-buffers at the base-address alignment, nullptr elsewhere") {
  const auto device = open_cl();
  MappedTestFile file(4 * 4096);
  auto buffer = device->import_host(file.region->bytes()).buffer;
  REQUIRE(buffer);
  const std::uint64_t align = device->info().caps.sub_buffer_alignment;
  REQUIRE(align > 1);

  auto view = buffer->view(2 * align, 1000);
  REQUIRE(view);
  CHECK(view->size() == 1000);
  CHECK(view->mechanism() == "use_host_ptr");
  cl_mem parent = nullptr;
  REQUIRE(clGetMemObjectInfo(as_mem(*view), CL_MEM_ASSOCIATED_MEMOBJECT, sizeof parent, &parent, nullptr) ==
          CL_SUCCESS);
  CHECK(parent == as_mem(*buffer));
  CHECK(read_back(*view, 0, 1000) == test::slice(file.bytes, 2 * align, 1000));
  CHECK(kernel_copy(as_mem(*view), 10, 500) == test::slice(file.bytes, 2 * align + 10, 500));

  // A view of a view is cut from the root buffer (OpenCL has no nested sub-buffers).
  auto nested = view->view(align, 100);
  REQUIRE(nested);
  CHECK(read_back(*nested, 0, 100) == test::slice(file.bytes, 3 * align, 100));

  CHECK(buffer->view(align + 1, 100) == nullptr);  // misses CL_DEVICE_MEM_BASE_ADDR_ALIGN
  CHECK(error_code_of([&] { buffer->view(4 * 4096 - 10, 11); }) == ErrorCode::usage);
}

TEST_CASE("zero-copy: misaligned or oversized ranges are declined or refused cleanly") {
  const auto device = open_cl();
  MappedTestFile file(4 * 4096);
  const auto range = file.region->bytes();
  CHECK(device->import_host(range.subspan(100, 4096)).buffer == nullptr);   // not page-aligned: direct
  CHECK(device->import_host(range.subspan(4096, 4096)).buffer != nullptr);  // a later page is fine

  const auto small = open_cl({.memory = {}, .max_alloc = 8192, .import_host_ptr = {}});
  CHECK(small->import_host(range.subspan(0, 8192)).buffer != nullptr);
  CHECK(error_code_of([&] { small->import_host(range); }) == ErrorCode::out_of_memory);
}

TEST_CASE("direct: host-visible buffers are mapped for writing, then read by kernels") {
  const auto device = open_cl();
  const std::size_t size = 100'000;
  const auto bytes = pattern_bytes(size, 3);
  auto buffer = device->allocate(size, MemoryPlace::host_visible);
  REQUIRE(buffer);
  CHECK(buffer->mechanism() == "host_visible");
  CHECK(buffer->size() == size);
  const auto target = buffer->begin_host_write();
  REQUIRE(target.size() == size);
  std::memcpy(target.data(), bytes.data(), size);
  buffer->end_host_write();
  buffer->end_host_write();  // harmless when already unmapped

  CHECK(read_back(*buffer, 0, size) == bytes);
  CHECK(kernel_copy(as_mem(*buffer), 12345, 4000) == test::slice(bytes, 12345, 4000));

  // Writing twice: the second mapping replaces the contents (WRITE_INVALIDATE_REGION).
  const auto again = buffer->begin_host_write();
  std::fill(again.begin(), again.end(), std::byte{0x5a});
  buffer->end_host_write();
  CHECK(read_back(*buffer, size - 4, 4) == std::vector<std::byte>(4, std::byte{0x5a}));

  // Destroying a buffer that is still mapped unmaps it first.
  auto abandoned = device->allocate(4096, MemoryPlace::host_visible);
  CHECK(abandoned->begin_host_write().size() == 4096);
  abandoned.reset();
}

TEST_CASE("staged (forced discrete): uploads from pinned slots, several in flight, slots reused") {
  const auto device = open_cl({.memory = MemoryModel::discrete, .max_alloc = {}, .import_host_ptr = {}});
  REQUIRE(device->info().memory == MemoryModel::discrete);
  const std::size_t size = 1 << 20;
  const std::size_t slot_bytes = 64 << 10;
  const std::size_t slot_count = 4;
  const auto bytes = pattern_bytes(size, 11);

  auto buffer = device->allocate(size, MemoryPlace::device_local);
  CHECK(buffer->mechanism() == "allocated");
  std::vector<std::unique_ptr<StagingBuffer>> slots;
  for (std::size_t i = 0; i < slot_count; ++i) {
    slots.push_back(device->allocate_staging(slot_bytes));
    REQUIRE(slots.back()->bytes().size() == slot_bytes);
  }

  std::mutex mutex;
  std::condition_variable freed;
  std::vector<bool> busy(slot_count, false);
  std::atomic<int> completed{0};
  std::atomic<int> failures{0};
  std::size_t max_in_flight = 0;
  // The first upload's done() waits until a whole ring's worth has been issued. Completions run in
  // submission order on the backend's completion thread, so none of the others completes before
  // it either: when the last slot is taken, every slot is in flight — deterministically, not by
  // how fast the device happens to be.
  std::mutex gate_mutex;
  std::condition_variable gate_changed;
  bool gate_open = false;
  const auto caller = std::this_thread::get_id();
  std::atomic<int> ran_on_caller{0};
  for (std::size_t offset = 0, chunk = 0; offset < size; offset += slot_bytes, ++chunk) {
    const std::size_t slot = chunk % slot_count;
    {
      std::unique_lock lock(mutex);
      freed.wait(lock, [&] { return !busy[slot]; });
      busy[slot] = true;
      max_in_flight = std::max<std::size_t>(max_in_flight, std::count(busy.begin(), busy.end(), true));
    }
    // Fill the second half of the slot only: the upload's src_offset must be honoured.
    const std::size_t n = std::min(slot_bytes / 2, size - offset);
    std::memcpy(slots[slot]->bytes().data() + slot_bytes / 2, bytes.data() + offset, n);
    device->upload(*slots[slot], slot_bytes / 2, *buffer, offset, n, [&, slot, chunk](std::exception_ptr error) {
      if (chunk == 0) {
        std::unique_lock gate(gate_mutex);
        gate_changed.wait(gate, [&] { return gate_open; });
      }
      if (std::this_thread::get_id() == caller) ++ran_on_caller;
      if (error) ++failures;
      ++completed;
      const std::lock_guard lock(mutex);
      busy[slot] = false;
      freed.notify_all();
    });
    if (chunk + 1 == slot_count) {
      {
        const std::lock_guard gate(gate_mutex);
        gate_open = true;
      }
      gate_changed.notify_all();
    }
  }
  device->finish();
  const int uploads = static_cast<int>((size + slot_bytes - 1) / slot_bytes);
  CHECK(completed == uploads);
  CHECK(failures == 0);
  CHECK(max_in_flight == slot_count);  // the whole ring at once
  CHECK(ran_on_caller == 0);           // upload() returns before its copy is done

  // Only the first half of every 64 KiB chunk was uploaded; the rest of the buffer is undefined.
  for (std::size_t offset = 0; offset < size; offset += slot_bytes)
    CHECK(read_back(*buffer, offset, slot_bytes / 2) == test::slice(bytes, offset, slot_bytes / 2));
  CHECK(kernel_copy(as_mem(*buffer), 100, 1000) == test::slice(bytes, 100, 1000));

  // Bounds are checked before anything is enqueued; the error comes back through `done`.
  int called = 0;
  std::exception_ptr last;
  const auto mark = [&](std::exception_ptr e) {
    ++called;
    last = e;
  };
  device->upload(*slots[0], slot_bytes - 1, *buffer, 0, 2, mark);
  CHECK(error_code_of([&] { std::rethrow_exception(last); }) == ErrorCode::usage);
  device->upload(*slots[0], 0, *buffer, size - 1, 2, mark);
  CHECK(error_code_of([&] { std::rethrow_exception(last); }) == ErrorCode::usage);
  CHECK(called == 2);
  device->upload(*slots[0], 0, *buffer, 0, 0, mark);  // an empty upload completes, without error
  device->finish();
  CHECK(called == 3);
  CHECK_FALSE(last);
}

TEST_CASE("out of memory: over max allocation and an exhausted device fail cleanly") {
  const auto device = open_cl();
  const std::uint64_t max_alloc = device->info().caps.max_alloc;
  CHECK(error_code_of([&] { device->allocate(max_alloc + 1, MemoryPlace::device_local); }) == ErrorCode::out_of_memory);
  CHECK(error_code_of([&] { device->allocate(max_alloc + 1, MemoryPlace::host_visible); }) == ErrorCode::out_of_memory);
  CHECK(error_code_of([&] { device->allocate_staging(max_alloc + 1); }) == ErrorCode::out_of_memory);
  try {
    device->allocate(max_alloc + 1, MemoryPlace::device_local);
  } catch (const Error& error) {
    const std::string message = error.what();
    CHECK(message.find(std::to_string(max_alloc + 1)) != std::string::npos);
    CHECK(message.find("opencl:0") != std::string::npos);
  }

  const auto small = open_cl({.memory = MemoryModel::discrete, .max_alloc = 1 << 20, .import_host_ptr = {}});
  CHECK(small->allocate(1 << 20, MemoryPlace::device_local)->size() == 1u << 20);
  CHECK(error_code_of([&] { small->allocate((1 << 20) + 1, MemoryPlace::device_local); }) == ErrorCode::out_of_memory);
}

TEST_CASE("device memory accounting: reservations stop at the capacity and are returned") {
  auto account = std::make_shared<opencl::MemoryAccount>(100);
  CHECK(account->try_reserve(60));
  CHECK_FALSE(account->try_reserve(41));
  CHECK_FALSE(account->try_reserve(~std::uint64_t{0}));  // no overflow past the capacity
  {
    opencl::Reservation held(account, 40);
    CHECK(account->try_reserve(0));
    CHECK(account->used() == 60);  // `held` wraps bytes already counted by the caller
  }
  CHECK(account->used() == 20);
  account->release(20);
  CHECK(account->try_reserve(100));
  opencl::MemoryAccount unknown(0);  // capacity unknown: never refuses
  CHECK(unknown.try_reserve(~std::uint64_t{0}));
}

TEST_CASE("out of memory: a full device refuses the next allocation, and freeing gives it back") {
  // meson sets MALLOC_PERTURB_, which makes glibc fill every malloc'd byte: PoCL's lazily
  // allocated device memory would then really be written, GiBs of it. Run this case in a child
  // without it, so filling the device costs address space only.
  if (const char* perturb = std::getenv("MALLOC_PERTURB_"); perturb && std::string(perturb) != "0") {
    const auto self = std::filesystem::read_symlink("/proc/self/exe");
    std::string out;
    const int rc = test::run_command(
        str("env -u MALLOC_PERTURB_ '", self.string(), "' --test-case='out of memory: a full device*' 2>&1"), &out);
    CHECK_MESSAGE(rc == 0, out);
    return;
  }
  const auto device = open_cl();
  const DeviceCaps caps = device->info().caps;
  REQUIRE(caps.device_memory > 0);
  // PoCL (a CPU device) allocates lazily in this process, so even many GiB cost only address
  // space; a real GPU would fill its memory for real: keep that small.
  const std::uint64_t fill_limit = device->info().kind == DeviceKind::cpu ? (64ull << 30) : (8ull << 30);
  if (caps.device_memory > fill_limit) {
    MESSAGE("skipped: filling ", caps.device_memory, " bytes of device memory is too much for a test");
    return;
  }
  const std::uint64_t chunk = std::min<std::uint64_t>(caps.max_alloc, 1ull << 30);
  const std::uint64_t fits = caps.device_memory / chunk;
  for (int round = 0; round < 2; ++round) {  // the second round proves nothing stayed reserved
    std::vector<std::unique_ptr<DeviceBuffer>> held;
    for (std::uint64_t i = 0; i < fits; ++i) held.push_back(device->allocate(chunk, MemoryPlace::device_local));
    try {
      device->allocate(chunk, MemoryPlace::device_local);
      FAIL("allocation past CL_DEVICE_GLOBAL_MEM_SIZE succeeded");
    } catch (const Error& error) {
      CHECK(error.code() == ErrorCode::out_of_memory);
      CHECK(std::string(error.what()).find("out of memory") != std::string::npos);
    }
    // A failed allocation takes nothing: what is left still fits.
    const std::uint64_t left = caps.device_memory - fits * chunk;
    if (left > 0) CHECK(device->allocate(left, MemoryPlace::host_visible)->size() == left);
  }
}

TEST_CASE("OpenCL status codes become errors naming the call and the code") {
  try {
    opencl::check(CL_MEM_OBJECT_ALLOCATION_FAILURE, "clCreateBuffer", " (", 42, " bytes)");
    FAIL("no error");
  } catch (const Error& error) {
    CHECK(error.code() == ErrorCode::out_of_memory);
    CHECK(std::string(error.what()) == "clCreateBuffer failed: CL_MEM_OBJECT_ALLOCATION_FAILURE (-4) (42 bytes)");
  }
  CHECK(error_code_of([] { opencl::check(CL_INVALID_MEM_OBJECT, "clEnqueueReadBuffer"); }) == ErrorCode::device);
  CHECK(error_code_of([] { opencl::check(CL_OUT_OF_RESOURCES, "clEnqueueWriteBuffer"); }) == ErrorCode::out_of_memory);
  CHECK(opencl::error_name(-9999) == "unknown OpenCL error");
  opencl::check(CL_SUCCESS, "clFinish");
}

TEST_CASE("zero-byte allocations still yield a usable handle") {
  const auto device = open_cl();
  auto buffer = device->allocate(0, MemoryPlace::device_local);
  CHECK(buffer->size() == 0);
  CHECK(buffer->native().handle != nullptr);
  std::vector<std::byte> none;
  buffer->read_back(0, none);
}

TEST_CASE("read_back and view out of range: the one error every backend gives") {
  test::TempDir dir;
  CHECK(test::check_device_ranges(*open_device("opencl:0"), dir.path()) >= 2);
  DeviceOverrides discrete;
  discrete.memory = MemoryModel::discrete;
  CHECK(test::check_device_ranges(*open_device("opencl:0", discrete), dir.path()) == 1);
}
