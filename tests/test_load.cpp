// The loader end to end on real files: every placement on the host device (zero_copy, direct,
// staged) and the null device (staged), verified byte for byte; callbacks, progress, events,
// cancellation, subsets, both read engines, O_DIRECT, the in-memory file system, encoded ONNX
// tensors, TFJS tensors split across shards, and `lwload load`.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <thread>
#include <filesystem>
#include <functional>

#include <boost/json.hpp>
#include <cstring>
#include <map>
#include <optional>

#include "lwload/backend.hpp"
#include "lwload/error.hpp"
#include "lwload/loader.hpp"
#include "lwload/memory_file_system.hpp"
#include "support/budget_checks.hpp"
#include "support/faulty_device.hpp"
#include "support/test_support.hpp"
#include "support/verify_checks.hpp"
#include "synth/synth.hpp"

using namespace lwload;
using lwload::test::TempDir;

namespace {

constexpr std::uint64_t kSeed = 7;

synth::SynthSpec spec(std::string format, std::uint64_t total, std::uint32_t tensors, std::uint64_t alignment) {
  synth::SynthSpec s;
  s.format = std::move(format);
  s.total_bytes = total;
  s.tensor_count = tensors;
  s.alignment = alignment;
  s.seed = kSeed;
  return s;
}

Manifest write_synth(const std::filesystem::path& path, const synth::SynthSpec& s) {
  write_model(path, s);
  return open_manifest(path);
}

// The model written under `dir`, then opened from a copy in a MemoryFileSystem ("mem/a.safetensors"),
// which the manifest carries: a file with no descriptor.
Manifest write_in_memory(const std::filesystem::path& dir, const synth::SynthSpec& s) {
  write_model(dir / "a.safetensors", s);
  auto fs = std::make_shared<MemoryFileSystem>();
  fs->add_file("mem/a.safetensors", test::read_file(dir / "a.safetensors"));
  OpenOptions open;
  open.file_system = fs;
  return open_manifest("mem/a.safetensors", open);
}

// Checks a host-device tensor's bytes (through its native host pointer) against synth's contents.
void check_host_contents(const Weights& weights) {
  for (const TensorHandle& h : weights.tensors()) {
    if (!weights.plan().tensors[h.index].selected) continue;
    REQUIRE(h.buffer != nullptr);
    CHECK(h.native.type == lwload::NativeType::host_ptr);
    std::vector<std::byte> expected(h.bytes);
    synth::expected_bytes(kSeed, static_cast<std::uint32_t>(h.index), 0, expected);
    const auto* data = static_cast<const std::byte*>(h.native.handle) + h.offset;
    CHECK_MESSAGE(std::memcmp(data, expected.data(), h.bytes) == 0, h.info->name);
  }
}

// Loads `m` on the host as planned and with direct and staged forced: each load holds synth's
// bytes and verifies; `each` sees every Weights too.
void load_every_placement(const Manifest& m, const std::function<void(const Weights&)>& each = {}) {
  const auto device = open_device("host");
  for (const std::optional<Placement> force :
       {std::optional<Placement>{}, std::optional{Placement::direct}, std::optional{Placement::staged}}) {
    CAPTURE(force ? placement_name(*force) : "planned");
    LoadOptions options;
    options.plan.force = force;
    const Weights w = load(m, *device, options);
    if (!force) CHECK(w.plan().count(Placement::zero_copy) == m.tensors.size());
    check_host_contents(w);
    CHECK(verify(w).tensors == m.tensors.size());
    if (each) each(w);
  }
}

std::string placement_list(const Weights& w) {
  std::string out;
  for (const auto& h : w.tensors()) out += str(placement_name(h.placement), ' ');
  return out;
}

}  // namespace

TEST_CASE("host: zero_copy, direct and staged loads hold the file's bytes and verify") {
  TempDir dir;
  for (const char* format : {"safetensors", "gguf"}) {
    CAPTURE(format);
    const Manifest m = write_synth(dir / str("m.", format), spec(format, 3 << 20, 6, 4096));
    const auto device = open_device("host");

    SUBCASE("zero_copy") {
      const Weights w = load(m, *device);
      CHECK(w.plan().count(Placement::zero_copy) == 6);
      for (const auto& h : w.tensors()) {
        CHECK(h.placement == Placement::zero_copy);
        CHECK(h.mechanism == "mapped_file");
        CHECK(h.buffer == w.tensors()[0].buffer);  // one region
      }
      check_host_contents(w);
      CHECK(verify(w).tensors == 6);
    }
    SUBCASE("direct") {
      LoadOptions options;
      options.plan.force = Placement::direct;
      const Weights w = load(m, *device, options);
      CHECK(placement_list(w) == "direct direct direct direct direct direct ");
      for (const auto& h : w.tensors()) CHECK(h.mechanism == "host_visible");
      check_host_contents(w);
      CHECK(verify(w).bytes == m.total_bytes());
      CHECK(w.stats().bytes_read == m.total_bytes());
    }
    SUBCASE("staged, tensors larger than a slot streamed in chunks") {
      LoadOptions options;
      options.plan.force = Placement::staged;
      options.plan.staging_budget = 4 * 128 * 1024;  // 128 KiB slots, 512 KiB tensors
      const Weights w = load(m, *device, options);
      CHECK(w.plan().count(Placement::staged) == 6);
      CHECK(w.plan().slot_bytes == 128 * 1024);
      CHECK(w.stats().uploads >= 6 * 4);
      for (const auto& h : w.tensors()) CHECK(h.mechanism == "allocated");
      check_host_contents(w);
      CHECK(verify(w).tensors == 6);
    }
  }
}

TEST_CASE("host: packed tensors load zero_copy at any offset, straight from the file's pages") {
  TempDir dir;
  const Manifest m = write_synth(dir / "p.safetensors", spec("safetensors", 1 << 20, 5, 0));
  const auto device = open_device("host");
  const Weights w = load(m, *device);
  CHECK(placement_list(w) == "zero_copy zero_copy zero_copy zero_copy zero_copy ");
  for (const auto& h : w.tensors()) CHECK(h.mechanism == "mapped_file");
  CHECK(w.stats().zero_copy_bytes == m.total_bytes());
  CHECK(w.stats().resident_bytes >= m.total_bytes());
  check_host_contents(w);
  CHECK(verify(w).tensors == 5);
}

// Evicts a file from the page cache (after writing it back), so residency shows in mincore.
bool evict(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return false;
  ::fdatasync(fd);
  const bool ok = ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0;
  ::close(fd);
  return ok;
}

// Fraction of a tensor's pages resident in memory now.
double resident_fraction(const TensorHandle& h) {
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<std::uintptr_t>(h.native.handle) + h.offset;
  const std::uintptr_t first = begin / page * page, end = (begin + h.bytes + page - 1) / page * page;
  std::vector<unsigned char> in_core((end - first) / page);
  if (::mincore(reinterpret_cast<void*>(first), end - first, in_core.data()) != 0) return -1;
  return static_cast<double>(std::count_if(in_core.begin(), in_core.end(), [](unsigned char c) { return c & 1; })) /
         static_cast<double>(in_core.size());
}

TEST_CASE("ready means resident: a zero_copy tensor's pages are in memory before its callback, unless lazy") {
  TempDir dir;
  const Manifest m = write_synth(dir / "p.safetensors", spec("safetensors", 8 << 20, 8, 0));
  const auto device = open_device("host");
  for (const bool lazy : {false, true}) {
    CAPTURE(lazy);
    REQUIRE(evict(dir / "p.safetensors"));
    LoadOptions options;
    options.lazy = lazy;
    std::vector<double> at_ready;
    std::vector<std::string> phases;
    options.on_tensor_ready = [&](const TensorHandle& h) { at_ready.push_back(resident_fraction(h)); };
    options.on_event = [&](const LoadEvent& e) {
      if (e.kind == LoadEvent::Kind::phase) phases.emplace_back(e.phase);
    };
    const Weights w = load(m, *device, options);
    REQUIRE(at_ready.size() == 8);
    CHECK(w.plan().count(Placement::zero_copy) == 8);
    const bool populated = std::find(phases.begin(), phases.end(), "populate") != phases.end();
    if (!lazy) {
      CHECK(populated);
      for (double f : at_ready) CHECK(f == 1.0);
      CHECK(w.stats().resident_bytes >= w.stats().zero_copy_bytes * 9 / 10);
    } else {
      CHECK_FALSE(populated);
      CHECK(w.stats().populate_seconds == 0);
      // Nothing read the evicted pages: the first tensor is (mostly) not resident when ready.
      CHECK(at_ready.front() < 0.5);
    }
    check_host_contents(w);
  }
}

TEST_CASE("a file truncated during a zero_copy load is a clean Error(io) naming the file and tensor") {
  TempDir dir;
  // 96 MiB in 12 tensors: populated in 32 MiB chunks, so the first tensors are ready before the rest.
  const Manifest m = write_synth(dir / "t.safetensors", spec("safetensors", 96 << 20, 12, 0));
  const auto device = open_device("host");
  LoadOptions options;
  bool truncated = false;
  options.on_tensor_ready = [&](const TensorHandle&) {
    if (truncated) return;
    truncated = true;
    std::filesystem::resize_file(dir / "t.safetensors", 40 << 20);  // another process truncates it
  };
  try {
    (void)load(m, *device, options);
    FAIL("the load succeeded on a truncated file");
  } catch (const Error& e) {
    const std::string what = e.what();
    CHECK(e.code() == ErrorCode::io);
    CHECK(what.find("t.safetensors") != std::string::npos);
    CHECK(what.find("tensor '") != std::string::npos);
    CHECK(what.find("truncated") != std::string::npos);
  }
  CHECK(truncated);
}

TEST_CASE("a file truncated after a zero_copy load: verify and read-back report it, no signal") {
  TempDir dir;
  const Manifest m = write_synth(dir / "v.safetensors", spec("safetensors", 4 << 20, 4, 0));
  const auto device = open_device("host");
  const Weights w = load(m, *device);
  REQUIRE(w.plan().count(Placement::zero_copy) == 4);
  std::filesystem::resize_file(dir / "v.safetensors", 4096);
  try {
    (void)verify(w);
    FAIL("verify passed on a truncated file");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::io);
    CHECK(std::string(e.what()).find("changed since it was loaded") != std::string::npos);
  }
  // Reading the lost pages through the import is caught too (the lost page is an error, not a signal).
  const TensorHandle& last = w.tensors().back();
  std::vector<std::byte> buffer(last.bytes);
  try {
    w.read_back(last, 0, buffer);
    FAIL("read-back of a truncated mapping succeeded");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::io);
    CHECK(std::string(e.what()).find("shorter than when it was mapped") != std::string::npos);
    CHECK(std::string(e.what()).find("v.safetensors: tensor '" + last.info->name + "'") != std::string::npos);
  }
}

namespace sigbus_owner {
std::atomic<int> app_calls{0};
void app_handler(int) { app_calls.fetch_add(1); }
bool app_handler_installed() {
  struct sigaction current {};
  ::sigaction(SIGBUS, nullptr, &current);
  return current.sa_handler == app_handler;
}
}  // namespace sigbus_owner

TEST_CASE("lost pages are errors and the application's SIGBUS handler stays its own, on several threads") {
  using namespace sigbus_owner;
  struct sigaction app {
  }, before{};
  app.sa_handler = app_handler;
  sigemptyset(&app.sa_mask);
  REQUIRE(::sigaction(SIGBUS, &app, &before) == 0);  // installed before any load
  TempDir dir;
  const Manifest m = write_synth(dir / "s.safetensors", spec("safetensors", 4 << 20, 4, 0));
  const auto device = open_device("host");
  const Weights w = load(m, *device);
  REQUIRE(w.plan().count(Placement::zero_copy) == 4);
  std::filesystem::resize_file(dir / "s.safetensors", 4096);
  std::atomic<int> errors{0}, other{0};
  std::atomic<bool> handler_lost{false};
  std::vector<std::thread> readers;
  for (int t = 0; t < 4; ++t)
    readers.emplace_back([&] {
      const TensorHandle& last = w.tensors().back();
      std::vector<std::byte> buffer(last.bytes);
      for (int i = 0; i < 50; ++i) {
        try {
          w.read_back(last, 0, buffer);
          other.fetch_add(1);
        } catch (const Error& e) {
          (e.code() == ErrorCode::io ? errors : other).fetch_add(1);
        }
        if (!app_handler_installed()) handler_lost = true;
      }
    });
  // The application re-installs its handler while lwload reads on other threads.
  for (int i = 0; i < 50; ++i) REQUIRE(::sigaction(SIGBUS, &app, nullptr) == 0);
  for (std::thread& t : readers) t.join();
  CHECK(errors == 200);
  CHECK(other == 0);
  CHECK_FALSE(handler_lost);
  CHECK(app_handler_installed());  // and after
  CHECK(app_calls == 0);           // no fault of lwload's reached it
  ::sigaction(SIGBUS, &before, nullptr);
}

TEST_CASE("host forced discrete: staged through the ring, small tensors coalesced into one read") {
  TempDir dir;
  const Manifest m = write_synth(dir / "p.safetensors", spec("safetensors", 256 * 1024, 64, 0));  // 4 KiB tensors
  DeviceOverrides overrides;
  overrides.memory = MemoryModel::discrete;
  const auto device = open_device("host", overrides);
  const Weights w = load(m, *device);
  CHECK(w.plan().count(Placement::staged) == 64);
  CHECK(w.stats().reads < 8);                           // neighbours share slot-sized reads
  CHECK(w.stats().reads == w.plan().schedule.reads());  // the plan's reads, no more, no fewer
  CHECK(w.stats().uploads == 64);                       // one upload per tensor
  check_host_contents(w);
  CHECK(verify(w).tensors == 64);
}

TEST_CASE("direct: small neighbours read in runs (a read per MiB, not per tensor), each copied to its own buffer") {
  TempDir dir;
  const Manifest m = write_synth(dir / "small.safetensors", spec("safetensors", 4 << 20, 20000, 0));  // ~200 B each
  const auto device = open_device("host");
  LoadOptions options;
  options.plan.force = Placement::direct;
  std::size_t ready = 0;
  options.on_tensor_ready = [&](const TensorHandle&) { ++ready; };
  const Weights w = load(m, *device, options);
  CHECK(w.plan().count(Placement::direct) == 20000);
  CHECK(ready == 20000);
  CHECK(w.stats().reads <= 8);  // 4 MiB in runs of at most 1 MiB (was 20,000 reads)
  CHECK(w.stats().reads == w.plan().schedule.reads());
  check_host_contents(w);
  CHECK(verify(w).tensors == 20000);
  // A file cut short after open_manifest: a clean error naming it, never a short tensor.
  std::filesystem::resize_file(dir / "small.safetensors", std::filesystem::file_size(dir / "small.safetensors") - 3000);
  const Error e = test::error_of([&] { (void)load(m, *device, options); });
  INFO(e.what());
  CHECK(std::string(e.what()).find("small.safetensors") != std::string::npos);
}

TEST_CASE("the host reports the memory it has; a plan needing more is refused before any allocation") {
  const auto host = open_device("host");
  CHECK(host->info().caps.device_memory > 0);  // MemAvailable at least
  TempDir dir;
  const Manifest m = write_synth(dir / "c.safetensors", spec("safetensors", 4 << 20, 4, 0));
  // Lowered (as a cgroup or RLIMIT_AS would): direct needs 4 MiB, the device has 3.
  for (const std::string spec_name : {"host", "null"}) {
    CAPTURE(spec_name);
    DeviceOverrides overrides;
    overrides.device_memory = 3 << 20;
    const auto device = open_device(spec_name, overrides);
    LoadOptions options;
    if (spec_name == "host") options.plan.force = Placement::direct;
    try {
      load(m, *device, options);
      FAIL("a plan larger than the device was loaded");
    } catch (const Error& e) {
      const std::string what = e.what();
      CHECK(e.code() == ErrorCode::does_not_fit);
      CHECK(what.find("3145728") != std::string::npos);
      CHECK(what.find("largest: '" + m.tensors[0].name.substr(0, 1)) != std::string::npos);
      CHECK(what.find("nothing was allocated") != std::string::npos);
    }
  }
  // zero_copy needs no device allocation: the same limit loads it.
  DeviceOverrides overrides;
  overrides.device_memory = 3 << 20;
  const auto device = open_device("host", overrides);
  CHECK(load(m, *device).plan().count(Placement::zero_copy) == 4);
}

TEST_CASE(
    "budgets on the host and null devices: too little free refused with the numbers; regions past the import limit "
    "load direct") {
  test::check_device_budgets("host");
  test::check_device_budgets("null");  // staged only: the memory it is told it has
}

TEST_CASE("a plan handed to load() is derived again from the manifest and the device; its schedule is made again") {
  TempDir dir;
  const Manifest m = write_synth(dir / "p.safetensors", spec("safetensors", 1 << 20, 16, 0));
  const auto host = open_device("host");
  const auto null = open_device("null");
  const auto usage = [&](Device& device, const Plan& plan, std::string_view says) {
    const Error e = test::error_of([&] { (void)load(m, device, plan); });
    INFO(e.what());
    CHECK(e.code() == ErrorCode::usage);
    CHECK(std::string(e.what()).find(says) != std::string::npos);
  };
  const Plan plan = make_plan(m, host->info());
  REQUIRE(plan.count(Placement::zero_copy) == 16);
  usage(*null, plan, "made for device host:0");
  Plan short_plan = plan;
  short_plan.tensors.pop_back();
  usage(*host, short_plan, "15 tensors planned, 16 in the manifest");
  Plan moved = plan;
  moved.tensors[3].region_offset += 4;
  usage(*host, moved, "tensor '" + m.tensors[3].name + "' region_offset is ");
  Plan twice = plan;
  twice.regions.push_back(twice.regions.front());
  usage(*host, twice, "or one another region names");
  Plan declined_with_tensors = plan;
  declined_with_tensors.regions.front().declined = "edited";
  usage(*host, declined_with_tensors, "is declined (edited) but still holds");

  // Regions declined when planning (here, past the device's import budget) are no obstacle.
  DeviceOverrides budget;
  budget.import_limit = 4096;
  budget.max_alloc = 128 * 1024;  // a region per tensor or two
  const auto limited = open_device("host", budget);
  const Plan partly = make_plan(m, limited->info());
  REQUIRE(partly.imported_regions() < partly.regions.size());
  const Weights kept = load(m, *limited, partly);
  CHECK(kept.plan().count(Placement::direct) > 0);
  check_host_contents(kept);

  // Reads dropped from a staged plan's schedule (or never there): the load reads every tensor anyway.
  PlanOptions staged;
  staged.force = Placement::staged;
  Plan edited = make_plan(m, host->info(), staged);
  const std::size_t reads = edited.schedule.reads();
  REQUIRE(reads > 0);
  edited.schedule.queues.clear();
  const Weights w = load(m, *host, edited);
  CHECK(w.stats().reads == reads);
  check_host_contents(w);
  CHECK(verify(w).tensors == 16);
}

TEST_CASE(
    "a plan handed to load(): each stored figure it could derive is derived again; one that differs is refused by "
    "name") {
  TempDir dir;
  const Manifest m = write_synth(dir / "p.safetensors", spec("safetensors", 1 << 20, 16, 0));
  const auto host = open_device("host");
  const auto refused = [&](const Plan& plan, std::initializer_list<std::string_view> says) {
    const Error e = test::error_of([&] { (void)load(m, *host, plan); });
    INFO(e.what());
    CHECK(e.code() == ErrorCode::usage);
    for (std::string_view s : says) CHECK(std::string(e.what()).find(s) != std::string::npos);
  };
  const Plan plan = make_plan(m, host->info());
  REQUIRE(plan.imported_regions() >= 1);
  const std::string first = "first tensor '" + m.tensors[plan.regions[0].tensors.front()].name + "'";

  Plan map_offset = plan;
  map_offset.regions[0].map_offset += 4096;
  refused(map_offset, {"region 0", first, "map_offset is "});
  Plan map_length = plan;
  map_length.regions[0].map_length += 4096;  // still holds the import: only derivation catches it
  refused(map_length, {"region 0", first, "map_length is "});
  Plan shorter = plan;
  shorter.regions[0].map_length -= 4096;
  refused(shorter, {"region 0", "map_length is "});
  Plan used = plan;
  used.regions[0].used -= 1;
  refused(used, {"region 0", "used is "});
  Plan offset = plan;
  offset.regions[0].offset += 4096;
  refused(offset, {"region 0", "offset is "});
  Plan placed = plan;
  placed.tensors[5].region = no_region;
  refused(placed, {"tensor '" + m.tensors[5].name + "' zero_copy"});
  Plan totals = plan;
  totals.mapped_bytes += 1;
  refused(totals, {"mapped_bytes is "});
  Plan pinned = plan;
  pinned.host.evictable += 4096;
  refused(pinned, {"host memory evictable is "});

  // The staging ring follows from the staged bytes and the options: a slot count or size that
  // does not is refused by name.
  PlanOptions staged_options;
  staged_options.force = Placement::staged;
  staged_options.staging_budget = 1 << 20;
  const Plan staged = make_plan(m, host->info(), staged_options);
  REQUIRE(staged.staging_slots == 4);
  Plan slots = staged;
  slots.staging_slots = 8;
  refused(slots, {"staging slots (staging_slots) is 8"});
  Plan slot_bytes = staged;
  slot_bytes.slot_bytes = 4096;
  refused(slot_bytes, {"staging slot_bytes is 4096"});
  Plan budget = staged;
  budget.staging_budget *= 2;
  refused(budget, {"staging budget (staging_budget) is "});
  Plan region_for_staged = staged;
  region_for_staged.tensors[2].region_offset = 64;
  refused(region_for_staged, {"tensor '" + m.tensors[2].name + "' region_offset is 64"});

  // Untampered plans from make_plan load, and keep their figures.
  for (const Plan* good : {&plan, &staged}) {
    const Weights w = load(m, *host, *good);
    CHECK(w.plan().regions.size() == good->regions.size());
    CHECK(w.plan().slot_bytes == good->slot_bytes);
    CHECK(w.plan().mapped_bytes == good->mapped_bytes);
    check_host_contents(w);
  }
}

TEST_CASE("a plan made when memory was plentiful is refused at load once the machine no longer has room for it") {
  TempDir dir;
  const Manifest m = write_synth(dir / "p.safetensors", spec("safetensors", 4 << 20, 4, 0));
  DeviceOverrides overrides;
  overrides.memory = MemoryModel::discrete;  // staged: the ring and nothing mapped
  const auto device = open_device("host", overrides);
  MachineMemory plenty;
  plenty.mem_total = plenty.mem_available = std::uint64_t{64} << 30;
  PlanOptions options;
  options.machine = plenty;
  const Plan plan = make_plan(m, device->info(), options);
  REQUIRE(plan.host.resident > 0);
  CHECK(plan.host.verdict.find("fits") == 0);

  // The same machine at load: it loads.
  LoadOptions at_load;
  at_load.plan.machine = plenty;
  CHECK(load(m, *device, plan, at_load).plan().host.verdict.find("fits") == 0);

  // Memory since taken: the plan is refused before anything is read, with the numbers.
  MachineMemory tight;
  tight.mem_total = std::uint64_t{64} << 30;
  tight.mem_available = plan.host.resident - 1;
  at_load.plan.machine = tight;
  const Error e = test::error_of([&] { (void)load(m, *device, plan, at_load); });
  INFO(e.what());
  CHECK(e.code() == ErrorCode::does_not_fit);
  CHECK(std::string(e.what()).find(std::to_string(plan.host.resident)) != std::string::npos);
  CHECK(std::string(e.what()).find("nothing was read") != std::string::npos);
}

TEST_CASE("a mechanism refused at load is re-planned: the executed plan says what ran, with the reason") {
  TempDir dir;
  // An in-memory file system has no descriptors: it cannot reopen a file for O_DIRECT, and
  // io_uring cannot read it. Both are refused only when the load sets up its reads.
  const Manifest m = write_in_memory(dir.path(), spec("safetensors", 4 << 20, 4, 4096));
  const auto device = open_device("host");

  LoadOptions options;
  options.plan.force = Placement::staged;
  options.plan.direct_io = true;
  options.plan.staging_budget = 4 * 256 * 1024;
  const Plan planned = make_plan(m, device->info(), options.plan);
  REQUIRE(planned.direct_io);  // asked for: the plan cannot know the file system refuses it
  std::uint64_t longest_planned = 0;
  for (const auto& queue : planned.schedule.queues)
    for (const Read& read : queue) longest_planned = std::max(longest_planned, read.length);
  CHECK(longest_planned == planned.slot_bytes - 2 * 4096);  // O_DIRECT slack at each end
  // The extents O_DIRECT reads are decided in the plan: whole blocks holding the wanted bytes.
  for (const auto& queue : planned.schedule.queues)
    for (const Read& read : queue) {
      CHECK(read.extent_offset % 4096 == 0);
      CHECK(read.extent_length % 4096 == 0);
      CHECK(read.extent_offset <= read.offset);
      CHECK(read.offset + read.length <= read.extent_offset + read.extent_length);
      CHECK(read.extent_length <= planned.slot_bytes);
    }

  const Weights w = load(m, *device, options);
  const Plan& ran = w.plan();
  CAPTURE(ran.direct_io_reason);
  CHECK_FALSE(ran.direct_io);
  CHECK(ran.direct_io_reason.find("buffered: O_DIRECT refused at load") == 0);
  CHECK(ran.direct_io_reason.find("cannot reopen it for O_DIRECT") != std::string::npos);
  CHECK(ran.direct_io_reason.find("asked for") != std::string::npos);  // what was planned, kept
  // The reads were re-planned buffered: whole slots, no slack.
  std::uint64_t longest = 0;
  for (const auto& queue : ran.schedule.queues)
    for (const Read& read : queue) longest = std::max(longest, read.length);
  CHECK(longest == ran.slot_bytes);
  for (const auto& queue : ran.schedule.queues)
    for (const Read& read : queue) {
      CHECK(read.extent_offset == read.offset);  // buffered: exactly the wanted bytes
      CHECK(read.extent_length == read.length);
    }
  CHECK(w.io().direct_io_bytes == 0);
  CHECK(w.io().buffered_bytes == m.total_bytes());
  check_host_contents(w);
  CHECK(verify(w).tensors == 4);

  // Staging slots the device did not align to a page: O_DIRECT refused for them, re-planned buffered.
  {
    TempDir on_disk;
    const Manifest disk = write_synth(on_disk / "d.safetensors", spec("safetensors", 4 << 20, 4, 4096));
    test::FaultyDevice misaligned(open_device("host"));
    misaligned.misalign_staging = true;
    LoadOptions staged = options;
    const Weights s = load(disk, misaligned, staged);
    CAPTURE(s.plan().direct_io_reason);
    CHECK_FALSE(s.plan().direct_io);
    CHECK(s.plan().direct_io_reason.find("buffered: O_DIRECT refused at load") == 0);
    CHECK(s.plan().direct_io_reason.find("not page-aligned") != std::string::npos);
    CHECK(s.io().direct_io_bytes == 0);
    check_host_contents(s);
  }

  // io_uring asked for, and usable by this kernel, but not for a file without a descriptor.
  options.plan.io = IoEngine::io_uring;
  options.plan.direct_io = false;
  const Plan uring = make_plan(m, device->info(), options.plan);
  if (!test::available("io_uring", uring.schedule.engine == IoEngine::io_uring, uring.schedule.engine_reason)) return;
  const Weights u = load(m, *device, options);
  CAPTURE(u.plan().schedule.engine_reason);
  CHECK(u.plan().schedule.engine == IoEngine::pread);
  CHECK(u.plan().schedule.engine_reason.find("io_uring not used: refused at load") == 0);
  CHECK(u.plan().direct_io_reason == uring.direct_io_reason);  // buffered as planned: nothing re-planned there
  check_host_contents(u);
}

TEST_CASE("null: staged, host memory limited to the ring, not verifiable") {
  TempDir dir;
  const Manifest m = write_synth(dir / "m.gguf", spec("gguf", 4 << 20, 8, 0));
  // The staging memory the device is asked for, counted as it is allocated and freed: its peak is
  // the plan's ring (slots × slot bytes) exactly, within the configured budget, for several
  // budgets and slot counts.
  for (const std::uint64_t budget : {std::uint64_t{1} << 20, std::uint64_t{3} << 20}) {
    for (const std::uint32_t slots : {1u, 2u, 4u, 8u}) {
      CAPTURE(budget);
      CAPTURE(slots);
      test::FaultyDevice device(open_device("null"));
      LoadOptions options;
      options.plan.staging_budget = budget;
      options.plan.staging_slots = slots;
      const Weights w = load(m, device, options);
      CHECK(w.plan().count(Placement::staged) == 8);
      CHECK(w.plan().staging_slots == slots);
      CHECK(w.plan().staging_budget == w.plan().staging_slots * w.plan().slot_bytes);
      CHECK(w.plan().staging_budget <= budget);
      CHECK(device.counters.peak_staging_bytes.load() == w.plan().staging_budget);
      CHECK(device.counters.live_staging.load() == 0);  // the ring is freed when the load ends
      CHECK(w.stats().bytes_uploaded == m.total_bytes());
      for (const auto& h : w.tensors()) CHECK(h.native.type == lwload::NativeType::none);
    }
  }
  test::FaultyDevice device(open_device("null"));
  LoadOptions options;
  options.plan.staging_budget = 1 << 20;
  const Weights w = load(m, device, options);
  CHECK(w.plan().staging_budget == 1 << 20);  // 4 MiB staged: the ring takes the whole budget
  CHECK(device.counters.peak_staging_bytes.load() == 1 << 20);
  try {
    verify(w);
    FAIL("null verified");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::unsupported);
    CHECK(std::string(e.what()).find("not verifiable") != std::string::npos);
  }
}

TEST_CASE("host and null: a byte changed in device memory fails verify, naming the tensor and the offset") {
  test::check_verify_finds_changed_byte("host");
  test::check_verify_finds_changed_byte("null");
  test::check_verify_finds_changed_decoded_byte("host");
}

TEST_CASE("callbacks: ready in load order once each, progress to the total, events paired") {
  TempDir dir;
  const Manifest m = write_synth(dir / "m.safetensors", spec("safetensors", 2 << 20, 16, 0));
  for (const char* device_name : {"host", "null"}) {
    CAPTURE(device_name);
    const auto device = open_device(device_name);
    LoadOptions options;
    options.plan.staging_budget = 256 * 1024;
    std::vector<std::size_t> ready;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> progress;
    std::vector<std::string> phases;
    std::map<std::size_t, int> starts, ends;
    std::uint64_t read_bytes = 0, uploaded = 0;
    options.on_tensor_ready = [&](const TensorHandle& h) {
      CHECK(ends[h.index] == 1);  // its end event came first
      ready.push_back(h.index);
    };
    options.on_progress = [&](std::uint64_t done, std::uint64_t total) { progress.emplace_back(done, total); };
    options.on_event = [&](const LoadEvent& e) {
      switch (e.kind) {
        case LoadEvent::Kind::phase: phases.emplace_back(e.phase); break;
        case LoadEvent::Kind::tensor_start: ++starts[e.tensor]; break;
        case LoadEvent::Kind::tensor_end:
          CHECK(starts[e.tensor] == 1);
          ++ends[e.tensor];
          break;
        case LoadEvent::Kind::bytes_read: read_bytes += e.bytes; break;
        case LoadEvent::Kind::bytes_uploaded: uploaded += e.bytes; break;
      }
    };
    const Weights w = load(m, *device, options);
    std::vector<std::size_t> order(16);
    for (std::size_t i = 0; i < 16; ++i) order[i] = i;
    CHECK(ready == order);
    REQUIRE(!progress.empty());
    for (std::size_t i = 1; i < progress.size(); ++i) CHECK(progress[i].first > progress[i - 1].first);
    CHECK(progress.back() == std::make_pair(m.total_bytes(), m.total_bytes()));
    CHECK(starts.size() == 16);
    CHECK(ends.size() == 16);
    const bool staged = std::string(device_name) == "null";
    CHECK(read_bytes == (staged ? m.total_bytes() : 0));  // packed file: no gaps read; host: zero_copy
    CHECK(uploaded == (staged ? m.total_bytes() : 0));
    REQUIRE(phases.size() >= 3);
    CHECK(phases[phases.size() - 3] == "read");
    CHECK(phases[phases.size() - 2] == "finish");
    CHECK(phases.back() == "done");
    CHECK(std::find(phases.begin(), phases.end(), "allocate") < std::find(phases.begin(), phases.end(), "read"));
  }
}

TEST_CASE("cancellation mid-load throws cancelled and hands out nothing") {
  TempDir dir;
  const Manifest m = write_synth(dir / "m.safetensors", spec("safetensors", 4 << 20, 8, 4096));
  for (Placement placement : {Placement::direct, Placement::staged}) {
    CAPTURE(placement_name(placement));
    const auto device = open_device("host");
    LoadOptions options;
    options.plan.force = placement;
    options.plan.staging_budget = 4 * 64 * 1024;
    options.cancel = std::make_shared<CancelToken>();
    // One read thread, so reads complete in order and the outcome does not depend on timing.
    options.plan.io = IoEngine::pread;
    options.plan.io_threads = 1;
    std::size_t ready = 0;
    std::uint64_t last_progress = 0;
    options.on_tensor_ready = [&](const TensorHandle&) {
      if (++ready == 1) options.cancel->cancel();  // after the first tensor
    };
    options.on_progress = [&](std::uint64_t done, std::uint64_t) { last_progress = done; };
    try {
      load(m, *device, options);
      FAIL("a cancelled load returned");
    } catch (const Error& e) {
      CHECK(e.code() == ErrorCode::cancelled);
      CHECK(std::string(e.what()).find("cancelled") != std::string::npos);
    }
    CHECK(ready >= 1);
    CHECK(ready < 8);
    CHECK(last_progress < m.total_bytes());
  }
  // Cancelled before it starts, at every placement, lazy zero_copy included: nothing is handed out.
  for (const std::string spec_name : {"null", "host"}) {
    for (std::optional<Placement> placement : {std::optional<Placement>{}, std::optional{Placement::zero_copy},
                                               std::optional{Placement::direct}, std::optional{Placement::staged}}) {
      for (bool lazy : {false, true}) {
        CAPTURE(spec_name);
        CAPTURE(lazy);
        const auto device = open_device(spec_name);
        // null is discrete: it neither imports nor takes direct writes.
        if (spec_name == "null" && (placement == Placement::zero_copy || placement == Placement::direct)) continue;
        LoadOptions options;
        options.plan.force = placement;
        options.lazy = lazy;
        options.cancel = std::make_shared<CancelToken>();
        options.cancel->cancel();
        std::size_t ready = 0;
        options.on_tensor_ready = [&](const TensorHandle&) { ++ready; };
        try {
          load(m, *device, options);
          FAIL("a load cancelled before it started returned");
        } catch (const Error& e) {
          CHECK(e.code() == ErrorCode::cancelled);
        }
        CHECK(ready == 0);
      }
    }
  }
  // A ready callback that cancels a lazy zero_copy load stops it after that tensor.
  const auto host = open_device("host");
  LoadOptions options;
  options.plan.force = Placement::zero_copy;
  options.lazy = true;
  options.cancel = std::make_shared<CancelToken>();
  std::size_t ready = 0;
  options.on_tensor_ready = [&](const TensorHandle&) {
    if (++ready == 2) options.cancel->cancel();
  };
  CHECK_THROWS_AS(load(m, *host, options), Error);
  CHECK(ready == 2);
}

TEST_CASE("a subset of tensors by name") {
  TempDir dir;
  const Manifest m = write_synth(dir / "m.safetensors", spec("safetensors", 1 << 20, 6, 4096));
  const auto device = open_device("host");
  for (Placement placement : {Placement::zero_copy, Placement::direct, Placement::staged}) {
    LoadOptions options;
    options.plan.force = placement;
    options.plan.only = {synth::tensor_name(3), synth::tensor_name(1)};
    const Weights w = load(m, *device, options);
    REQUIRE(w.tensors().size() == 6);  // one handle per tensor: the others skipped, with no buffer
    CHECK(w.find(synth::tensor_name(0))->placement == Placement::skipped);
    CHECK(w.find(synth::tensor_name(0))->buffer == nullptr);
    CHECK(w.plan().tensors[0].reason == "not selected");
    REQUIRE(w.find(synth::tensor_name(3)) != nullptr);
    CHECK(w.find(synth::tensor_name(3))->index == 3);
    CHECK(w.find(synth::tensor_name(3))->placement == placement);
    CHECK(w.plan().model_bytes == m.tensors[1].bytes + m.tensors[3].bytes);
    check_host_contents(w);
    CHECK(verify(w).tensors == 2);
  }
}

TEST_CASE("both read engines and O_DIRECT load the same bytes") {
  TempDir dir;
  const Manifest m = write_synth(dir / "p.safetensors", spec("safetensors", 3 << 20, 7, 0));
  DeviceOverrides overrides;
  overrides.memory = MemoryModel::discrete;
  const auto device = open_device("host", overrides);
  for (IoEngine engine : {IoEngine::auto_, IoEngine::pread, IoEngine::io_uring}) {
    for (bool direct_io : {false, true}) {
      CAPTURE(io_engine_name(engine));
      CAPTURE(direct_io);
      LoadOptions options;
      options.plan.io = engine;
      options.plan.direct_io = direct_io;
      options.plan.staging_budget = 4 * 256 * 1024;
      const Weights w = load(m, *device, options);
      const Plan& ran = w.plan();  // what ran: a mechanism refused at load is re-planned, with the reason
      if (engine != IoEngine::io_uring) CHECK(ran.schedule.engine == IoEngine::pread);  // auto: the pread pool
      if (engine == IoEngine::auto_) CHECK(ran.schedule.engine_reason.find("auto") != std::string::npos);
      if (engine == IoEngine::io_uring && ran.schedule.engine != engine)
        CHECK(ran.schedule.engine_reason.find("io_uring not used") != std::string::npos);
      if (direct_io && !ran.direct_io) CHECK(ran.direct_io_reason.find("O_DIRECT") != std::string::npos);
      if (ran.direct_io) CHECK(w.stats().bytes_read >= m.total_bytes());  // aligned head/tail slack
      CHECK(w.io().direct_io_bytes + w.io().buffered_bytes == w.stats().bytes_read);
      CHECK((w.io().direct_io_bytes > 0) == ran.direct_io);
      check_host_contents(w);
      CHECK(verify(w).tensors == 7);
    }
  }
}

TEST_CASE("in-memory file system: its files map by borrowing their bytes; reads use pread") {
  TempDir dir;
  const Manifest m = write_in_memory(dir.path(), spec("safetensors", 1 << 20, 4, 4096));
  const auto device = open_device("host");
  LoadOptions options;  // the manifest carries its file system: load reads the files it opened
  const Weights w = load(m, *device, options);
  CHECK(w.plan().count(Placement::zero_copy) == 4);
  check_host_contents(w);
  CHECK(verify(w).tensors == 4);
  options.plan.force = Placement::direct;
  const Weights direct = load(m, *device, options);
  CHECK(direct.plan().count(Placement::direct) == 4);
  CHECK(direct.plan().schedule.engine == IoEngine::pread);
  check_host_contents(direct);
}

TEST_CASE("a model inside a container, through a descriptor: zero-copy at an odd offset, nothing outside it counted") {
  TempDir dir;
  write_model(dir / "m.safetensors", spec("safetensors", 1 << 20, 5, 0));
  const auto model = test::read_file(dir / "m.safetensors");
  constexpr std::uint64_t kPrefix = 4097 + 3;  // not page- or element-aligned
  std::vector<std::byte> container(kPrefix + model.size() + 4096, std::byte{0xdd});
  std::fill_n(container.begin(), kPrefix, std::byte{0xee});
  std::copy(model.begin(), model.end(), container.begin() + kPrefix);
  test::write_file(dir / "app.apk", container);
  const int fd = ::open((dir / "app.apk").c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  const Manifest m = open_manifest_fd(fd, kPrefix, model.size());
  ::close(fd);  // lwload holds its own duplicate
  REQUIRE(m.tensors.size() == 5);
  CHECK(m.files.at(0).string().find("fd ") == 0);
  CHECK(m.tensors[0].pieces[0].offset >= kPrefix);  // offsets count in the container
  load_every_placement(m);

  // The window is the model's whole file: a header whose last tensor runs past it is refused,
  // though the container holds the bytes.
  const int again = ::open((dir / "app.apk").c_str(), O_RDONLY | O_CLOEXEC);
  const Error short_window = test::error_of([&] { (void)open_manifest_fd(again, kPrefix, model.size() - 1); });
  ::close(again);
  CHECK(short_window.code() == ErrorCode::bad_input);
  CHECK(std::string(short_window.what()).find("fd ") != std::string::npos);
  // A model from a descriptor is one file.
  CHECK(test::error_of([] { (void)open_manifest_fd(-1, 0, 1); }).code() == ErrorCode::usage);
}

TEST_CASE("a model in the caller's memory: zero-copy points into the caller's bytes; direct and staged copy them") {
  TempDir dir;
  write_model(dir / "m.safetensors", spec("safetensors", 1 << 20, 5, 0));
  const auto bytes = test::read_file(dir / "m.safetensors");
  std::filesystem::remove(dir / "m.safetensors");
  const Manifest m = open_manifest_memory(bytes);
  REQUIRE(m.tensors.size() == 5);
  load_every_placement(m, [&](const Weights& w) {
    for (const TensorHandle& h : w.tensors()) {
      const auto* data = static_cast<const std::byte*>(h.native.handle) + h.offset;
      const bool inside = data >= bytes.data() && data < bytes.data() + bytes.size();
      CHECK(inside == (h.placement == Placement::zero_copy));
    }
  });
}

TEST_CASE("reference files: GGUF from llama.cpp's writer and TFJS shards with tensors across files") {
  const auto host = open_device("host");
  DeviceOverrides overrides;
  overrides.memory = MemoryModel::discrete;
  const auto discrete = open_device("host", overrides);
  const Manifest gguf = open_manifest(test::testdata() / "gguf" / "tiny-llama-f32-f16-q8.gguf");
  const Manifest tfjs = open_manifest(test::testdata() / "tfjs" / "sharded_quantized");
  for (const Manifest* m : {&gguf, &tfjs}) {
    CAPTURE(m->format);
    for (Device* device : {host.get(), discrete.get()}) {
      LoadOptions options;
      options.plan.staging_budget = 4 * 16 * 1024;  // smaller than a 64 KiB shard
      const Weights w = load(*m, *device, options);
      CHECK(verify(w).bytes == w.plan().model_bytes);
      CHECK(w.plan().model_bytes > 0);
    }
  }
}

TEST_CASE("ONNX typed-field tensors are decoded on the host, direct and staged") {
  TempDir dir;
  const std::string script =
      str("import onnx\nfrom onnx import helper, TensorProto as TP\n"
          "x = helper.make_tensor_value_info('x', TP.INT64, [None])\n"
          "y = helper.make_tensor_value_info('y', TP.INT64, [None])\n"
          "ids = helper.make_tensor('ids', TP.INT64, [5], [1, -2, 300, 40000, -5000000000])\n"
          "w = helper.make_tensor('w', TP.FLOAT, [3], [1.5, -2.0, 0.25])\n"
          "g = helper.make_graph([helper.make_node('Add', ['x', 'ids'], ['y'])], 'g', [x], [y], initializer=[ids, w])\n"
          "onnx.save_model(helper.make_model(g), '",
          (dir / "typed.onnx").string(), "')\n");
  test::write_file(dir / "make.py", script);
  REQUIRE(test::run_command(str(test::kPython, " ", (dir / "make.py").string())) == 0);
  const Manifest m = open_manifest(dir / "typed.onnx");
  REQUIRE(m.tensors.size() == 2);
  const auto host = open_device("host");
  for (Placement placement : {Placement::direct, Placement::staged}) {
    LoadOptions options;
    options.plan.force = placement;
    const Weights w = load(m, *host, options);
    const TensorHandle* ids = w.find("ids");
    REQUIRE(ids != nullptr);
    CHECK(ids->bytes == 40);
    std::int64_t values[5];
    std::memcpy(values, static_cast<const std::byte*>(ids->native.handle) + ids->offset, sizeof values);
    CHECK(values[0] == 1);
    CHECK(values[1] == -2);
    CHECK(values[3] == 40000);
    CHECK(values[4] == -5000000000);
    const TensorHandle* wt = w.find("w");
    REQUIRE(wt != nullptr);
    float floats[3];
    std::memcpy(floats, static_cast<const std::byte*>(wt->native.handle) + wt->offset, sizeof floats);
    CHECK(floats[2] == 0.25f);
    CHECK(verify(w).tensors == 2);
  }
}

TEST_CASE("lwload load: --verify, --json, placements, exit codes") {
  const char* exe = std::getenv("LWLOAD_EXE");
  if (!lwload::test::have_exe()) return;
  TempDir dir;
  write_model(dir / "a.safetensors", spec("safetensors", 1 << 20, 4, 4096));
  const std::string model = (dir / "a.safetensors").string();
  std::string out;
  CHECK(test::run_command(str(exe, " load ", model, " --device host --verify"), &out) == 0);
  CHECK(out.find("zero_copy 4") != std::string::npos);
  CHECK(out.find("verify: ok, 4 tensors") != std::string::npos);
  out.clear();
  CHECK(test::run_command(str(exe, " load ", model,
                              " --device host --placement staged --slots 2 --budget 128KiB "
                              "--io pread --verify --json"),
                          &out) == 0);
  const auto json = boost::json::parse(out).as_object();
  CHECK(json.at("placements").at("staged").to_number<int>() == 4);
  CHECK(json.at("io_engine").as_string() == "pread");
  CHECK(json.at("verify").at("verified").as_bool());
  out.clear();
  CHECK(test::run_command(str(exe, " load ", model, " --device null --verify --verbose"), &out) == 0);
  CHECK(out.find("not verifiable") != std::string::npos);
  CHECK(out.find("io engine:") != std::string::npos);
  CHECK(test::run_command(str(exe, " load ", model, " --device host --only nope 2>/dev/null")) == 2);
  CHECK(test::run_command(str(exe, " load ", model, " --device null --budget 1KiB 2>/dev/null")) == 1);
  test::write_file(dir / "bad.safetensors", std::string_view("\x08\0\0\0\0\0\0\0{\"a\":1}", 15));
  CHECK(test::run_command(str(exe, " load ", (dir / "bad.safetensors").string(), " --device host 2>/dev/null")) == 3);
}
