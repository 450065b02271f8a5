// The planner: placement per tensor with its reason, import regions under a device's limits,
// forced placements, subsets, and "does not fit" failures before anything is allocated.
#include <doctest/doctest.h>

#include "core/align.hpp"
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <boost/json.hpp>

#include "lwload/backend.hpp"
#include "lwload/error.hpp"
#include "lwload/plan.hpp"
#include "support/test_support.hpp"
#include "synth/synth.hpp"

using namespace lwload;
using lwload::test::TempDir;

namespace {

Manifest synth_manifest(const TempDir& dir, const std::string& name, std::uint64_t alignment, std::uint32_t tensors = 8,
                        std::uint64_t total = 1 << 20, const std::string& format = "safetensors") {
  synth::SynthSpec spec;
  spec.format = format;
  spec.total_bytes = total;
  spec.tensor_count = tensors;
  spec.alignment = alignment;
  write_model(dir / name, spec);
  return open_manifest(dir / name);
}

DeviceInfo host_info(const DeviceOverrides& overrides = {}) { return open_device("host", overrides)->info(); }
DeviceInfo null_info() { return open_device("null")->info(); }

TensorInfo raw_tensor(std::string name, std::uint64_t offset, std::uint64_t bytes) {
  TensorInfo t;
  t.name = std::move(name);
  t.dtype = DType::U8;
  t.shape = {static_cast<std::int64_t>(bytes)};
  t.bytes = bytes;
  t.pieces = {Piece{0, offset, bytes}};
  return t;
}

using test::error_of;

}  // namespace

TEST_CASE("page-aligned tensors on the host are zero_copy, grouped into one region") {
  TempDir dir;
  const Manifest m = synth_manifest(dir, "a.safetensors", 4096);
  const Plan plan = make_plan(m, host_info());
  REQUIRE(plan.tensors.size() == 8);
  CHECK(plan.count(Placement::zero_copy) == 8);
  REQUIRE(plan.regions.size() == 1);
  const ImportRegion& region = plan.regions[0];
  CHECK(region.offset % 4096 == 0);
  CHECK(region.tensors.size() == 8);
  CHECK(region.used == m.tensors.back().pieces[0].offset + m.tensors.back().bytes - region.offset);
  for (std::size_t i = 0; i < plan.tensors.size(); ++i) {
    const TensorPlan& tp = plan.tensors[i];
    CHECK(tp.region == 0);
    CHECK(tp.region_offset == m.tensors[i].pieces[0].offset - region.offset);
    CHECK(tp.reason.find("mapped in place") != std::string::npos);
  }
  CHECK(plan.device_bytes == 0);
  CHECK(plan.staging_budget == 0);
  CHECK(plan.mapped_bytes == region.length);
  CHECK(plan.predicted_host_peak == plan.mapped_bytes);
  CHECK(plan.model_bytes == m.total_bytes());
}

TEST_CASE("packed tensors are zero_copy: regions cover them from the import alignment below") {
  TempDir dir;
  const Manifest m = synth_manifest(dir, "p.safetensors", 0);  // packed, as the reference writer does
  std::size_t misaligned = 0;
  for (const TensorInfo& t : m.tensors) misaligned += t.pieces[0].offset % 4096 != 0;
  CHECK(misaligned >= 7);

  // The host imports the mapping itself: no alignment at all, the region starts at the first tensor.
  const Plan host = make_plan(m, host_info());
  CHECK(host.count(Placement::zero_copy) == m.tensors.size());
  REQUIRE(host.regions.size() == 1);
  CHECK(host.regions[0].offset == m.tensors[0].pieces[0].offset);
  CHECK(host.device_bytes == 0);

  // A GPU-like device: imports start on a page, sizes are multiples of 64 (Intel's rule).
  DeviceInfo gpu = host_info();
  gpu.caps.import_alignment = 4096;
  gpu.caps.size_multiple = 64;
  const Plan plan = make_plan(m, gpu);
  CHECK(plan.count(Placement::zero_copy) == m.tensors.size());
  REQUIRE(plan.regions.size() == 1);
  const ImportRegion& region = plan.regions[0];
  CHECK(region.offset % 4096 == 0);
  CHECK(region.offset <= m.tensors[0].pieces[0].offset);
  CHECK(region.offset + 4096 > m.tensors[0].pieces[0].offset);
  CHECK(region.length % 64 == 0);
  CHECK(region.length >= region.used);
  for (std::size_t i = 0; i < plan.tensors.size(); ++i) {
    CHECK(plan.tensors[i].placement == Placement::zero_copy);
    CHECK(region.offset + plan.tensors[i].region_offset == m.tensors[i].pieces[0].offset);
  }
  CHECK(plan.device_bytes == 0);
  CHECK(plan.predicted_host_peak == plan.mapped_bytes);
}

TEST_CASE("the only reasons left for not zero_copy are real ones, and plan says which") {
  Manifest m;
  m.format = "test";
  m.files = {"x.bin"};
  // "large" fits one allocation, but not the region that must start on the page below it.
  m.tensors = {raw_tensor("small", 100, 1000), raw_tensor("large", 5100, 261500)};
  TensorInfo split = raw_tensor("split", 400000, 10);
  split.pieces.push_back(Piece{0, 500000, 10});
  split.bytes = 20;
  m.tensors.push_back(split);
  DeviceInfo gpu = host_info();
  gpu.caps.import_alignment = 4096;
  gpu.caps.max_alloc = 256 * 1024;
  const Plan plan = make_plan(m, gpu);
  CHECK(plan.tensors[0].placement == Placement::zero_copy);
  CHECK(plan.tensors[1].placement == Placement::direct);
  CHECK(plan.tensors[1].reason ==
        "the smallest region covering it (262504 bytes) exceeds the device's largest import (262144) → direct");
  CHECK(plan.tensors[2].placement == Placement::direct);
  CHECK(plan.tensors[2].reason == "split across 2 pieces → direct");
}

TEST_CASE("a tensor larger than the device's largest shader binding is planned, with a warning") {
  Manifest m;
  m.format = "test";
  m.files = {"x.bin"};
  m.tensors = {raw_tensor("small", 0, 1000), raw_tensor("big", 4096, 200000)};
  DeviceInfo gpu = host_info();
  gpu.caps.max_shader_binding = 128 * 1024;  // Vulkan's maxStorageBufferRange
  const Plan plan = make_plan(m, gpu);
  CHECK(plan.tensors[0].reason.find("warning") == std::string::npos);
  CHECK(plan.tensors[1].placement == Placement::zero_copy);
  CHECK(plan.tensors[1].reason.find("warning: 200000 bytes exceed the device's largest shader binding (131072)") !=
        std::string::npos);
}

TEST_CASE("region boundaries fall between tensors; neighbouring regions may share a page") {
  Manifest m;
  m.format = "test";
  m.files = {"x.bin"};
  // Four 100,000-byte tensors packed from offset 40: no boundary is page-aligned.
  for (int i = 0; i < 4; ++i) m.tensors.push_back(raw_tensor(str("t", i), 40 + 100000 * i, 100000));
  DeviceInfo gpu = host_info();
  gpu.caps.import_alignment = 4096;
  gpu.caps.max_alloc = 210000;  // two tensors and the head fit, three do not
  const Plan plan = make_plan(m, gpu);
  CHECK(plan.count(Placement::zero_copy) == 4);
  REQUIRE(plan.regions.size() == 2);
  CHECK(plan.regions[0].tensors == std::vector<std::size_t>{0, 1});
  CHECK(plan.regions[1].tensors == std::vector<std::size_t>{2, 3});
  CHECK(plan.regions[1].offset == 200040 / 4096 * 4096);  // the page holding t1's tail and t2's head
  for (const ImportRegion& r : plan.regions) CHECK(r.length <= gpu.caps.max_alloc);
}

TEST_CASE(
    "re-planning declined regions: tensors fall back with the reason, regions keep their numbers, totals and reads "
    "follow") {
  Manifest m;
  m.format = "test";
  m.files = {"x.bin"};
  for (int i = 0; i < 4; ++i) m.tensors.push_back(raw_tensor(str("t", i), 4096 * (1 + 64 * i), 4096));
  DeviceInfo gpu = host_info();
  gpu.caps.import_alignment = 4096;
  Plan plan = make_plan(m, gpu);
  REQUIRE(plan.regions.size() == 4);  // more than 64 KiB apart: one region each
  CHECK(plan.schedule.reads() == 0);
  replan_declined(plan, m, gpu, {{1, "driver said no"}, {3, "driver said no again"}});
  REQUIRE(plan.regions.size() == 4);
  CHECK(plan.regions[0].imported());
  CHECK(plan.regions[1].declined == "at load: driver said no");
  CHECK(plan.regions[1].tensors.empty());
  CHECK(plan.regions[1].length == 0);
  CHECK_FALSE(plan.regions[3].imported());
  CHECK(plan.count(Placement::zero_copy) == 2);
  CHECK(plan.tensors[1].placement == Placement::direct);
  CHECK(plan.tensors[1].reason.find("; at load: driver said no → direct") != std::string::npos);
  CHECK(plan.tensors[1].region == no_region);
  CHECK(plan.tensors[2].region == 2);  // its number kept
  CHECK(plan.schedule.reads() == 2);   // the two declined tensors are read now (runs of one each)
  // A region already declined cannot be declined again.
  CHECK(error_of([&] { replan_declined(plan, m, gpu, {{1, "again"}}); }).code() == ErrorCode::usage);
  CHECK(plan.device_bytes == 2 * 4096);
  CHECK(plan.mapped_bytes == 2 * 4096);
  CHECK(plan.predicted_host_peak == plan.mapped_bytes + plan.device_bytes);

  // A device without host-visible memory stages the declined tensors: the ring appears.
  DeviceInfo no_direct = gpu;
  no_direct.caps.host_visible_alloc = false;
  Plan staged = make_plan(m, no_direct);
  CHECK(staged.staging_budget == 0);
  replan_declined(staged, m, no_direct, {{0, "no"}});
  CHECK(staged.tensors[0].placement == Placement::staged);
  CHECK(staged.staging_slots == 4);
  CHECK(staged.slot_bytes == 4096);
  CHECK(staged.predicted_host_peak == staged.mapped_bytes + staged.device_bytes + staged.staging_budget);
}

TEST_CASE("staging shape: the budget in whole-page slots, shrunk for small models, refused when too small") {
  CHECK(staging_shape(0, 64 << 20, 4).budget == 0);
  const StagingShape big = staging_shape(1ull << 30, 64 << 20, 4);
  CHECK(big.slots == 4);
  CHECK(big.slot_bytes == 16 << 20);
  CHECK(big.budget == 64 << 20);
  const StagingShape small = staging_shape(10000, 64 << 20, 4);
  CHECK(small.slot_bytes == 4096);  // 2,500 bytes a slot, rounded up to a page
  CHECK(small.budget == 4 * 4096);
  const StagingShape odd = staging_shape(1ull << 30, (64 << 20) + 5000, 3);
  CHECK(odd.slot_bytes % 4096 == 0);
  CHECK(odd.budget <= (64 << 20) + 5000);
  CHECK(error_of([] { staging_shape(1 << 20, 8191, 2); }).code() == ErrorCode::does_not_fit);
  CHECK(error_of([] { staging_shape(1 << 20, 1 << 20, 0); }).code() == ErrorCode::usage);
}

TEST_CASE("regions stay within a small forced max allocation") {
  TempDir dir;
  const Manifest m = synth_manifest(dir, "a.safetensors", 4096, 8, 1 << 20);  // 8 × 128 KiB
  DeviceOverrides overrides;
  overrides.max_alloc = 300 * 1024;  // two tensors per region
  const Plan plan = make_plan(m, host_info(overrides));
  CHECK(plan.count(Placement::zero_copy) == 8);
  REQUIRE(plan.regions.size() == 4);
  for (const ImportRegion& r : plan.regions) {
    CHECK(r.length <= 300 * 1024);
    CHECK(r.tensors.size() == 2);
    CHECK(r.offset % 4096 == 0);
    // Mapped in whole pages of the size in force (tests/meson.build: also 16 and 64 KiB).
    CHECK(r.map_offset % page_size() == 0);
    CHECK(r.map_length % page_size() == 0);
    CHECK(r.map_offset <= r.offset);
    CHECK(r.offset + r.length <= r.map_offset + r.map_length);
  }
  // Each tensor is inside its region at its recorded offset.
  for (std::size_t i = 0; i < plan.tensors.size(); ++i) {
    const TensorPlan& tp = plan.tensors[i];
    const ImportRegion& r = plan.regions.at(tp.region);
    CHECK(r.offset + tp.region_offset == m.tensors[i].pieces[0].offset);
    CHECK(tp.region_offset + m.tensors[i].bytes <= r.used);
  }

  // A tensor larger than max_alloc cannot be imported, nor allocated: does_not_fit, with numbers.
  overrides.max_alloc = 64 * 1024;
  const Error e = error_of([&] { make_plan(m, host_info(overrides)); });
  CHECK(e.code() == ErrorCode::does_not_fit);
  CHECK(std::string(e.what()).find("131072") != std::string::npos);
  CHECK(std::string(e.what()).find("65536") != std::string::npos);
}

TEST_CASE("import sizes are rounded up to the device's size multiple, within the pages mapped for them") {
  // In pages, so it holds at any page size (tests/meson.build runs it at 4, 16 and 64 KiB).
  const std::uint64_t page = page_size();
  Manifest m;
  m.format = "test";
  m.files = {"x.bin"};
  m.tensors = {raw_tensor("a", page, 1000), raw_tensor("b", 2 * page, 3 * page - 100), raw_tensor("c", 1 << 20, 100)};
  DeviceInfo info = host_info();
  info.caps.size_multiple = 4 * page;
  const Plan plan = make_plan(m, info);
  REQUIRE(plan.regions.size() == 2);  // c is more than 64 KiB past b: its own region
  CHECK(plan.regions[0].used == 4 * page - 100);
  CHECK(plan.regions[0].length == 4 * page);
  CHECK(plan.regions[0].map_offset == page);
  CHECK(plan.regions[0].map_length == 4 * page);  // the import fills the mapped pages exactly
  CHECK(plan.regions[0].tensors == std::vector<std::size_t>{0, 1});
  // c's 100 bytes map one page; an import of 4 pages would reach three pages past it (past the end
  // of a file, a fault): the planner declines the region, and c is read instead.
  CHECK(plan.regions[1].map_length == page);
  CHECK(plan.regions[1].declined.find(str("exceeds the ", page, " mapped bytes")) != std::string::npos);
  CHECK(plan.tensors[2].placement == Placement::direct);
  CHECK(plan.tensors[2].reason.find(str("exceeds the ", page, " mapped bytes → direct")) != std::string::npos);
  CHECK(plan.mapped_bytes == 4 * page);
}

TEST_CASE(
    "a zero_copy tensor starts at a multiple of the device's tensor alignment, else it is read, with the reason") {
  Manifest m;
  m.format = "test";
  m.files = {"x.bin"};
  // An engine that needs 32-byte aligned operands (a ggml buffer type): a and c are, b is not.
  m.tensors = {raw_tensor("a", 4096, 1000), raw_tensor("b", 5098, 1000), raw_tensor("c", 6144, 64)};
  DeviceInfo info = host_info();
  info.caps.tensor_alignment = 32;
  const Plan plan = make_plan(m, info);
  CHECK(plan.tensors[0].placement == Placement::zero_copy);
  CHECK(plan.tensors[1].placement == Placement::direct);
  CHECK(plan.tensors[1].reason.find("offset 5098 is not a multiple of the device's tensor alignment (32)") !=
        std::string::npos);
  CHECK(plan.tensors[2].placement == Placement::zero_copy);
  info.caps.tensor_alignment = 1;  // no constraint: every tensor in place
  CHECK(make_plan(m, info).count(Placement::zero_copy) == 3);
}

TEST_CASE("a device importing at less than page alignment: each region's mapping is the whole pages around it") {
  // OpenCL devices align imports to CL_DEVICE_MEM_BASE_ADDR_ALIGN (128 bytes on PoCL): a region may
  // start inside a page, but mmap maps whole pages from a page boundary.
  Manifest m;
  m.format = "test";
  m.files = {"x.bin"};
  m.tensors = {raw_tensor("a", 4096 + 200, 1000), raw_tensor("b", 3 * 4096 + 72, 5000)};
  DeviceInfo info = host_info();
  info.caps.import_alignment = 64;
  info.caps.size_multiple = 1;
  const Plan plan = make_plan(m, info);
  REQUIRE(!plan.regions.empty());
  CHECK(plan.regions[0].offset == 4096 + 192);  // aligned down to 64, not to the page
  const std::uint64_t page = page_size();       // 4 KiB, or 16 / 64 KiB in the page_sizes suite
  CHECK(plan.regions[0].map_offset == (4096 + 192) / page * page);
  for (const ImportRegion& r : plan.regions) {
    CAPTURE(r.offset);
    CHECK(r.map_offset % page == 0);
    CHECK(r.map_offset <= r.offset);
    CHECK(r.offset + r.used <= r.map_offset + r.map_length);
    CHECK((r.map_offset + r.map_length) % page == 0);
  }
}

TEST_CASE("discrete devices stage; the ring is the budget, shrunk for small models") {
  TempDir dir;
  const Manifest m = synth_manifest(dir, "a.safetensors", 4096, 4, 4 << 20);
  PlanOptions options;
  options.staging_budget = 64 << 20;
  options.staging_slots = 4;
  const Plan plan = make_plan(m, null_info(), options);
  CHECK(plan.count(Placement::staged) == 4);
  for (const TensorPlan& tp : plan.tensors) CHECK(tp.reason == "discrete memory → staged");
  CHECK(plan.staging_slots == 4);
  CHECK(plan.slot_bytes == 1 << 20);  // 4 MiB of model needs no more than 4 × 1 MiB
  CHECK(plan.staging_budget == 4 << 20);
  CHECK(plan.device_bytes == m.total_bytes());
  CHECK(plan.predicted_host_peak == plan.staging_budget);  // device memory is not host memory

  const Manifest big = synth_manifest(dir, "b.safetensors", 4096, 4, 16 << 20);
  options.staging_budget = 8 << 20;
  const Plan bounded = make_plan(big, null_info(), options);
  CHECK(bounded.slot_bytes == 2 << 20);
  CHECK(bounded.staging_budget == 8 << 20);
  CHECK(bounded.predicted_host_peak == 8 << 20);  // independent of the model's 16 MiB

  options.staging_budget = 1000;
  const Error e = error_of([&] { make_plan(big, null_info(), options); });
  CHECK(e.code() == ErrorCode::does_not_fit);
  CHECK(std::string(e.what()).find("1000") != std::string::npos);
}

TEST_CASE("a model larger than the device's memory fails before allocation, with the numbers") {
  TempDir dir;
  const Manifest m = synth_manifest(dir, "a.safetensors", 4096, 4, 4 << 20);
  DeviceInfo info = null_info();
  info.caps.device_memory = 3 << 20;
  const Error e = error_of([&] { make_plan(m, info); });
  CHECK(e.code() == ErrorCode::does_not_fit);
  const std::string message = e.what();
  CHECK(message.find(std::to_string(m.total_bytes())) != std::string::npos);
  CHECK(message.find(std::to_string(3 << 20)) != std::string::npos);
  CHECK(message.find("nothing was allocated") != std::string::npos);
  info.caps.device_memory = 8 << 20;
  CHECK_NOTHROW(make_plan(m, info));
}

TEST_CASE(
    "staged reads by the page cache: O_DIRECT when the files are cold, buffered when cached, as forced otherwise") {
  TempDir dir;
  const Manifest m = synth_manifest(dir, "a.safetensors", 4096, 4, 4 << 20);
  DeviceOverrides discrete;
  discrete.memory = MemoryModel::discrete;
  const DeviceInfo info = host_info(discrete);
  // Warm, and kept warm while the plan measures it: the pages are locked in memory, so memory
  // pressure from whatever else runs on the machine cannot evict some of them in between.
  const int warm_fd = ::open((dir / "a.safetensors").c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(warm_fd >= 0);
  const auto file_size = static_cast<std::size_t>(std::filesystem::file_size(dir / "a.safetensors"));
  void* pinned = ::mmap(nullptr, file_size, PROT_READ, MAP_SHARED | MAP_POPULATE, warm_fd, 0);
  REQUIRE(pinned != MAP_FAILED);
  ::close(warm_fd);
  if (::mlock(pinned, file_size) != 0) MESSAGE("mlock refused: the warm case relies on the pages staying cached");
  const Plan warm = make_plan(m, info);
  ::munlock(pinned, file_size);
  ::munmap(pinned, file_size);
  REQUIRE(warm.residency.size() == 1);
  CHECK(warm.residency[0].known);
  CHECK(warm.residency[0].cached == warm.residency[0].span);
  CHECK_FALSE(warm.direct_io);
  CHECK(warm.direct_io_reason.find("100%") != std::string::npos);
  // Evicted (clean pages: DONTNEED drops them, except on a file system that cannot, like tmpfs).
  {
    const int fd = ::open((dir / "a.safetensors").c_str(), O_RDONLY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    ::fdatasync(fd);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  }
  const Plan cold = make_plan(m, info);
  if (cold.residency[0].cached * 2 < cold.residency[0].span) {
    CHECK(cold.direct_io);
    CHECK(cold.direct_io_reason.find("cold") != std::string::npos);
  } else {
    MESSAGE("the scratch file system keeps evicted pages (tmpfs?): the cold case is not checked");
  }
  PlanOptions forced;
  forced.direct_io = false;
  CHECK_FALSE(make_plan(m, info, forced).direct_io);
  forced.direct_io = true;
  CHECK(make_plan(m, info, forced).direct_io);
  // Nothing staged, nothing to read with O_DIRECT.
  CHECK_FALSE(make_plan(m, host_info(), forced).direct_io);
}

TEST_CASE("what the device has free now bounds the plan, and says so; the import limit moves regions, in file order") {
  Manifest m;
  m.format = "safetensors";
  m.files = {"m.safetensors"};
  // Three tensors 1 MiB apart: three regions of one page-covered tensor each.
  for (int i = 0; i < 3; ++i) m.tensors.push_back(raw_tensor("t" + std::to_string(i), std::uint64_t(i) << 20, 300000));
  DeviceInfo info = null_info();
  info.memory = MemoryModel::unified;
  info.caps.import_host_ptr = true;
  info.caps.host_visible_alloc = false;  // moved tensors go staged
  info.caps.device_memory = 8 << 20;
  info.caps.memory_available = 1000;
  PlanOptions staged;
  staged.force = Placement::staged;
  const std::string refused = error_of([&] { make_plan(m, info, staged); }).what();
  CHECK(refused.find("has 1000 bytes free (of 8388608)") != std::string::npos);

  info.caps.memory_available = 0;
  const Plan all = make_plan(m, info);
  REQUIRE(all.regions.size() == 3);
  info.caps.import_limit = all.regions[0].length + all.regions[1].length + 1;  // two fit, the third does not
  const Plan limited = make_plan(m, info);
  CHECK(limited.imported_regions() == 2);
  CHECK(limited.regions[2].declined.find("imports at most") != std::string::npos);
  CHECK(limited.tensors[2].placement == Placement::staged);
  CHECK(limited.tensors[2].reason.find("imports at most " + std::to_string(info.caps.import_limit)) !=
        std::string::npos);
  CHECK(limited.tensors[2].reason.find("→ staged") != std::string::npos);
  CHECK(limited.mapped_bytes <= info.caps.import_limit);
}

TEST_CASE("forced placements: staged always, direct and zero-copy only where the device can") {
  TempDir dir;
  const Manifest m = synth_manifest(dir, "a.safetensors", 4096, 4);
  PlanOptions options;
  options.force = Placement::staged;
  Plan plan = make_plan(m, host_info(), options);
  CHECK(plan.count(Placement::staged) == 4);
  CHECK(plan.tensors[0].reason == "forced → staged");
  options.force = Placement::direct;
  plan = make_plan(m, host_info(), options);
  CHECK(plan.count(Placement::direct) == 4);
  CHECK(error_of([&] { make_plan(m, null_info(), options); }).code() == ErrorCode::usage);
  options.force = Placement::zero_copy;
  CHECK(error_of([&] { make_plan(m, null_info(), options); }).code() == ErrorCode::usage);
  DeviceOverrides discrete;
  discrete.memory = MemoryModel::discrete;
  CHECK(error_of([&] { make_plan(m, host_info(discrete), options); }).code() == ErrorCode::usage);
  // A forced zero_copy falls back per tensor where a tensor cannot be imported: here, on a device
  // whose imports start on a page, the region under an unaligned 256 KiB tensor exceeds max_alloc.
  const Manifest packed = synth_manifest(dir, "p.safetensors", 0, 4);  // 4 × 256 KiB
  DeviceInfo gpu = host_info();
  gpu.caps.import_alignment = 4096;
  gpu.caps.max_alloc = 256 * 1024;
  plan = make_plan(packed, gpu, options);
  CHECK(plan.count(Placement::direct) == 4);
  CHECK(plan.tensors[0].reason.find("largest import") != std::string::npos);
  CHECK(parse_placement("zero-copy") == Placement::zero_copy);
  CHECK_FALSE(parse_placement("auto"));
  CHECK(error_of([] { parse_placement("fast"); }).code() == ErrorCode::usage);
}

TEST_CASE("a subset of tensors by name; unknown names are usage errors") {
  TempDir dir;
  const Manifest m = synth_manifest(dir, "a.safetensors", 4096, 6);
  PlanOptions options;
  options.only = {synth::tensor_name(4), synth::tensor_name(1), synth::tensor_name(4)};
  const Plan plan = make_plan(m, host_info(), options);
  // One entry per manifest tensor, at its index: the others are skipped as not selected.
  REQUIRE(plan.tensors.size() == 6);
  CHECK(plan.count(Placement::zero_copy) == 2);
  for (std::size_t i = 0; i < 6; ++i) {
    CHECK(plan.tensors[i].selected == (i == 1 || i == 4));
    if (!plan.tensors[i].selected) {
      CHECK(plan.tensors[i].placement == Placement::skipped);
      CHECK(plan.tensors[i].reason == "not selected");
    }
  }
  CHECK(plan.model_bytes == m.tensors[1].bytes + m.tensors[4].bytes);
  REQUIRE(plan.regions.size() == 2);  // not neighbours any more
  CHECK(plan.regions[1].tensors == std::vector<std::size_t>{4});
  options.only = {"nope"};
  const Error e = error_of([&] { make_plan(m, host_info(), options); });
  CHECK(e.code() == ErrorCode::usage);
  CHECK(std::string(e.what()).find("'nope'") != std::string::npos);
}

TEST_CASE("strings and empty tensors are skipped; encoded and split tensors are never zero_copy") {
  Manifest m;
  m.format = "test";
  m.files = {"x.bin", "y.bin"};
  TensorInfo s = raw_tensor("names", 4096, 64);
  s.dtype = DType::STRING;
  TensorInfo empty = raw_tensor("empty", 8192, 0);
  TensorInfo encoded = raw_tensor("ids", 8192, 24);
  encoded.dtype = DType::I64;
  encoded.shape = {3};
  encoded.encoding = Encoding::onnx_varint;
  encoded.pieces = {Piece{0, 8192, 3}};
  TensorInfo split = raw_tensor("split", 12288, 100);
  split.pieces = {Piece{0, 12288, 60}, Piece{1, 0, 40}};
  m.tensors = {s, empty, encoded, split};
  const Plan plan = make_plan(m, host_info());
  CHECK(plan.tensors[0].placement == Placement::skipped);
  CHECK(plan.tensors[0].reason.find("STRING") != std::string::npos);
  CHECK(plan.tensors[1].placement == Placement::skipped);
  CHECK(plan.tensors[2].placement == Placement::direct);
  CHECK(plan.tensors[2].reason == "onnx_varint encoding is decoded on the host → direct");
  CHECK(plan.tensors[3].placement == Placement::direct);
  CHECK(plan.tensors[3].reason == "split across 2 pieces → direct");
  CHECK(plan.model_bytes == 124);
  CHECK(plan.decode_bytes == 3);
  const Plan staged = make_plan(m, null_info());
  CHECK(staged.decode_bytes == 3 + 24);  // staged: encoded and decoded bytes on the host
  CHECK(staged.count(Placement::skipped) == 2);
}

// The decode rule (check_decodes_fit) for every encoding, not only densified sparse tensors: the
// encoded + decoded bytes against the machine, for the tensors the load decodes.
TEST_CASE("the decode rule: any encoding, named; only selected tensors; sums past 2^64 refused, not wrapped") {
  Manifest m;
  m.format = "test";
  m.files = {"x.onnx"};
  TensorInfo ids = raw_tensor("ids", 8192, 24);
  ids.dtype = DType::I64;
  ids.shape = {3};
  ids.encoding = Encoding::onnx_varint;
  ids.pieces = {Piece{0, 8192, 3}};
  TensorInfo raw = raw_tensor("raw", 16384, 64);
  m.tensors = {ids, raw};
  MachineMemory small;
  small.mem_available = 26;  // ids needs 3 + 24 at once
  PlanOptions options;
  options.machine = small;
  const Error e = error_of([&] { make_plan(m, null_info(), options); });
  CHECK(e.code() == ErrorCode::does_not_fit);
  CHECK(std::string(e.what()) ==
        "x.onnx: decoding tensor 'ids' (onnx_varint encoding) needs 27 bytes (0.0 MiB) at once (3 bytes encoded + 24 "
        "bytes "
        "decoded) but the machine has 26 bytes (0.0 MiB) of host memory available (MemAvailable); nothing was read");
  CHECK(error_of([&] { check_decodes_fit(m, small); }).what() == std::string(e.what()));
  // Left out by `only`: not decoded, not checked. (The host maps "raw" in place; lazy, its pages
  // need not be resident in 26 bytes.)
  options.lazy = true;
  CHECK(error_of([&] { make_plan(m, host_info(), options); }).what() == std::string(e.what()));
  options.only = {"raw"};
  const Plan raw_only = make_plan(m, host_info(), options);
  CHECK(raw_only.tensors[0].placement == Placement::skipped);
  CHECK(raw_only.decode_bytes == 0);

  // More than the encoding can make of its bytes (ONNX: at least one byte per element): malformed,
  // refused before anything is allocated, whatever the machine has. Sparse tensors have no such
  // bound (tests/test_tflite.cpp): only memory bounds them.
  m.tensors[0].shape = {4};
  m.tensors[0].bytes = 32;
  const Error malformed = error_of([&] { check_decodes_fit(m, MachineMemory{}); });
  CHECK(malformed.code() == ErrorCode::bad_input);
  CHECK(std::string(malformed.what()) ==
        "x.onnx: tensor 'ids': its 32 bytes cannot come from 3 encoded bytes (onnx_varint: at least one encoded byte "
        "per element)");
  options.only = {};
  CHECK(error_of([&] { make_plan(m, host_info(), options); }).what() == std::string(malformed.what()));

  // A hand-built manifest whose encoded + decoded bytes pass 2^64: the one hard bound, a checked sum.
  m.tensors[0].encoding = Encoding::sparse;  // no bound but memory's
  m.tensors[0].bytes = UINT64_MAX;
  m.tensors[0].pieces = {Piece{0, 8192, 8}};
  const Error wraps = error_of([&] { check_decodes_fit(m, MachineMemory{}); });
  CHECK(wraps.code() == ErrorCode::does_not_fit);
  CHECK(std::string(wraps.what()).find("tensor 'ids' decode: 8 + 18446744073709551615 bytes passes 2^64") !=
        std::string::npos);
}

TEST_CASE("plan_to_json carries every decision") {
  TempDir dir;
  const Manifest m = synth_manifest(dir, "p.safetensors", 0, 3);
  const Plan plan = make_plan(m, host_info());
  const auto json = boost::json::parse(plan_to_json(plan, m)).as_object();
  CHECK(json.at("device").as_string() == "host:0");
  CHECK(json.at("memory").as_string() == "unified");
  CHECK(json.at("model_bytes").to_number<std::uint64_t>() == m.total_bytes());
  const auto& tensors = json.at("tensors").as_array();
  REQUIRE(tensors.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK(tensors[i].at("name").as_string() == m.tensors[i].name);
    CHECK(tensors[i].at("placement").as_string() == placement_name(plan.tensors[i].placement));
    CHECK(tensors[i].at("reason").as_string() == plan.tensors[i].reason);
  }
  CHECK(json.at("counts").at("direct").to_number<std::size_t>() == plan.count(Placement::direct));
}

TEST_CASE("lwload plan prints placements and reasons; exit codes follow the README") {
  const char* exe = std::getenv("LWLOAD_EXE");
  if (!lwload::test::have_exe()) return;
  TempDir dir;
  synth_manifest(dir, "p.safetensors", 0, 3);
  std::string out;
  CHECK(test::run_command(std::string(exe) + " plan " + (dir / "p.safetensors").string() + " --device host", &out) ==
        0);
  CHECK(out.find("mapped in place") != std::string::npos);

  CHECK(out.find("predicted host peak") != std::string::npos);
  out.clear();
  CHECK(test::run_command(
            std::string(exe) + " plan " + (dir / "p.safetensors").string() + " --device null --json --budget 8MiB",
            &out) == 0);
  const auto json = boost::json::parse(out).as_object();
  CHECK(json.at("counts").at("staged").to_number<int>() == 3);
  CHECK(test::run_command(std::string(exe) + " plan " + (dir / "p.safetensors").string() +
                          " --device null --budget 100 2>/dev/null") == 1);  // does_not_fit
  CHECK(test::run_command(std::string(exe) + " plan " + (dir / "p.safetensors").string() +
                          " --device nosuch 2>/dev/null") == 2);
  CHECK(test::run_command(std::string(exe) + " plan " + (dir / "missing.safetensors").string() +
                          " --device host 2>/dev/null") == 4);  // the OS refused the open: I/O error
}
