// Faults during a load: read errors, files truncated or replaced before and during the load,
// allocation failures half-way, failed uploads, a throwing callback, cancellation. Each must end in
// a clear lwload::Error with everything released: a wrapper device counts live buffers.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <random>
#include <stdexcept>
#include <thread>

#include <fcntl.h>
#include <unistd.h>

#include "core/align.hpp"
#include "io/io_engine.hpp"
#include "io/kernel_features.hpp"
#include "io/page_cache.hpp"
#include "lwload/backend.hpp"
#include "lwload/file_system.hpp"
#include "lwload/error.hpp"
#include "lwload/loader.hpp"
#include "lwload/memory_file_system.hpp"
#include "support/faulty_device.hpp"
#include "support/test_support.hpp"
#include "synth/synth.hpp"

using namespace lwload;
using lwload::test::FaultyDevice;
using lwload::test::TempDir;

namespace {

// As planned, then direct and staged forced.
const std::optional<Placement> kEveryPlacement[] = {std::nullopt, Placement::direct, Placement::staged};

std::unique_ptr<FaultyDevice> faulty(std::string_view spec, std::optional<MemoryModel> memory = std::nullopt) {
  DeviceOverrides overrides;
  overrides.memory = memory;
  return std::make_unique<FaultyDevice>(open_device(spec, overrides));
}

synth::SynthSpec spec(std::uint64_t total, std::uint32_t tensors, std::uint64_t alignment) {
  synth::SynthSpec s;
  s.total_bytes = total;
  s.tensor_count = tensors;
  s.alignment = alignment;
  return s;
}

// Runs the load expecting an Error with `code` whose message contains every one of `parts`.
void expect_failure(const Manifest& m, FaultyDevice& device, const LoadOptions& options, ErrorCode code,
                    std::initializer_list<std::string> parts) {
  try {
    load(m, device, options);
    FAIL("the load succeeded");
  } catch (const Error& e) {
    CHECK_MESSAGE(e.code() == code, e.what());
    for (const auto& part : parts)
      CHECK_MESSAGE(std::string(e.what()).find(part) != std::string::npos, e.what(), " lacks ", part);
  }
  CHECK(device.counters.live_buffers == 0);
  CHECK(device.counters.live_staging == 0);
}

LoadOptions forced(std::optional<Placement> placement, std::uint64_t budget = 4 * 64 * 1024) {
  LoadOptions options;
  options.plan.force = placement;
  options.plan.staging_budget = budget;
  return options;
}

}  // namespace

TEST_CASE("a read error mid-load (failing disk) releases everything") {
  TempDir dir;
  write_model(dir / "m.safetensors", spec(2 << 20, 8, 4096));
  auto fs = std::make_shared<MemoryFileSystem>();
  fs->add_file("m.safetensors", test::read_file(dir / "m.safetensors"));
  OpenOptions open;
  open.file_system = fs;
  const Manifest m = open_manifest("m.safetensors", open);
  fs->fail_reads_from("m.safetensors", m.tensors[5].pieces[0].offset + 100);
  for (const auto& run : {std::pair{"host", Placement::direct}, std::pair{"host", Placement::staged},
                          std::pair{"null", Placement::staged}}) {
    // Named copies, not a structured binding: CAPTURE's lambda cannot capture one before clang 16.
    const char* spec_name = run.first;
    const Placement placement = run.second;
    CAPTURE(spec_name);
    CAPTURE(placement_name(placement));
    auto device = faulty(spec_name);
    LoadOptions options = forced(placement);  // reads through the file system the manifest was opened with
    expect_failure(m, *device, options, ErrorCode::io, {"m.safetensors"});
  }
}

TEST_CASE("a file truncated after its headers were read fails before any data moves, naming file and tensor") {
  TempDir dir;
  const auto path = dir / "m.safetensors";
  write_model(path, spec(1 << 20, 4, 4096));
  const Manifest m = open_manifest(path);
  std::filesystem::resize_file(path, m.tensors[2].pieces[0].offset + 10);
  for (const std::optional<Placement> placement : kEveryPlacement) {
    auto device = faulty("host");
    expect_failure(m, *device, forced(placement), ErrorCode::bad_input,
                   {path.string(), "tensor '" + m.tensors[2].name + "'", "truncated"});
    CHECK(device->counters.allocations == 0);
  }
}

TEST_CASE("a file replaced by a smaller one after open_manifest: the load reads the file whose headers it holds") {
  TempDir dir;
  const auto path = dir / "m.gguf";
  synth::SynthSpec big = spec(1 << 20, 4, 0);
  big.format = "gguf";
  write_model(path, big);
  const Manifest m = open_manifest(path);
  synth::SynthSpec small = big;
  small.total_bytes = 64 * 1024;
  write_model(dir / "small.gguf", small);
  std::filesystem::rename(dir / "small.gguf", path);
  // The manifest kept its files open: the path now names another file, which is never read.
  for (const std::optional<Placement> placement : kEveryPlacement) {
    const auto device = open_device("host");
    const Weights w = load(m, *device, forced(placement));
    CHECK(w.file_identities().at(0).size == m.opened.at(0).identity.size);
    CHECK(verify(w).tensors == m.tensors.size());
  }
}

TEST_CASE("a file rewritten in place after open_manifest (same size, new bytes): Error(io) before a byte is trusted") {
  TempDir dir;
  const auto path = dir / "m.safetensors";
  write_model(path, spec(1 << 20, 4, 4096));
  const Manifest m = open_manifest(path);
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(m.tensors[1].pieces[0].offset));
    f.write("rewritten", 9);
  }
  // Deterministic: the rewrite's own timestamp may equal the open's on a coarse clock.
  std::filesystem::last_write_time(path, std::filesystem::last_write_time(path) + std::chrono::seconds(2));
  for (const std::optional<Placement> placement : kEveryPlacement) {
    auto device = faulty("host");
    expect_failure(m, *device, forced(placement), ErrorCode::io,
                   {path.string(), "changed since its headers were read"});
    CHECK(device->counters.allocations == 0);
  }
}

TEST_CASE("a file rewritten in place with its mtime put back (touch -r): the ctime in its identity tells") {
  TempDir dir;
  const auto path = dir / "m.safetensors";
  write_model(path, spec(1 << 20, 4, 4096));
  const Manifest m = open_manifest(path);
  struct stat before {};
  REQUIRE(::stat(path.c_str(), &before) == 0);
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(m.tensors[1].pieces[0].offset));
    f.write("rewritten", 9);
  }
  // touch -r: the old mtime back, to the nanosecond. Setting it moves the ctime (to "now"), and the
  // ctime cannot be set back; repeated until the clock has moved past the one the open saw.
  struct stat after {};
  const timespec times[2] = {before.st_atim, before.st_mtim};
  do {
    REQUIRE(::utimensat(AT_FDCWD, path.c_str(), times, 0) == 0);
    REQUIRE(::stat(path.c_str(), &after) == 0);
  } while (after.st_ctim.tv_sec == before.st_ctim.tv_sec && after.st_ctim.tv_nsec == before.st_ctim.tv_nsec);
  REQUIRE(after.st_size == before.st_size);
  REQUIRE(after.st_ino == before.st_ino);
  REQUIRE(after.st_mtim.tv_sec == before.st_mtim.tv_sec);
  REQUIRE(after.st_mtim.tv_nsec == before.st_mtim.tv_nsec);

  const FileIdentity then = m.opened.at(0).identity, now = m.opened.at(0).file->identity();
  CHECK(now.modified_ns == then.modified_ns);
  CHECK(now.size == then.size);
  CHECK(now.changed_ns != then.changed_ns);
  for (const std::optional<Placement> placement : kEveryPlacement) {
    auto device = faulty("host");
    expect_failure(m, *device, forced(placement), ErrorCode::io,
                   {path.string(), "changed since its headers were read", "status changed"});
    CHECK(device->counters.allocations == 0);
  }
  // The same after a load: verify compares nothing.
  const Manifest fresh = open_manifest(path);
  const auto device = open_device("host");
  const Weights w = load(fresh, *device);
  const timespec again[2] = {after.st_atim, after.st_mtim};
  struct stat loaded {};
  REQUIRE(::stat(path.c_str(), &loaded) == 0);
  do {
    {
      std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
      f.write("x", 1);
    }
    REQUIRE(::utimensat(AT_FDCWD, path.c_str(), again, 0) == 0);
    REQUIRE(::stat(path.c_str(), &after) == 0);
  } while (after.st_ctim.tv_sec == loaded.st_ctim.tv_sec && after.st_ctim.tv_nsec == loaded.st_ctim.tv_nsec);
  const Error e = test::error_of([&] { (void)verify(w); });
  CHECK(e.code() == ErrorCode::io);
  CHECK(std::string(e.what()).find("changed since it was loaded") != std::string::npos);
  CHECK(std::string(e.what()).find("status changed") != std::string::npos);
}

TEST_CASE("a link swapped in after open_manifest cannot lead the load out of the model folder") {
  TempDir dir;
  std::filesystem::create_directories(dir / "model");
  std::filesystem::create_directories(dir / "outside");
  const auto path = dir / "model" / "m.safetensors";
  write_model(path, spec(1 << 20, 4, 4096));
  const auto original = test::read_file(path);
  const Manifest m = open_manifest(path);
  // Same size, other bytes, outside the folder: what a link swapped in would expose.
  std::vector<std::byte> secret(original.size(), std::byte{0x5a});
  std::copy_n(original.begin(), static_cast<std::ptrdiff_t>(m.tensors[0].pieces[0].offset), secret.begin());
  test::write_file(dir / "outside" / "secret", secret);
  std::filesystem::remove(path);
  std::filesystem::create_symlink(dir / "outside" / "secret", path);
  for (const std::optional<Placement> placement : kEveryPlacement) {
    const auto device = open_device("host");
    const Weights w = load(m, *device, forced(placement));
    const TensorHandle& h = w.tensors().front();
    std::vector<std::byte> got(h.bytes);
    w.read_back(h, 0, got);
    const auto at = original.begin() + static_cast<std::ptrdiff_t>(h.info->pieces[0].offset);
    CHECK(std::equal(got.begin(), got.end(), at));
    CHECK(verify(w).tensors == m.tensors.size());
  }
}

TEST_CASE("O_DIRECT reads reopen the open file, not its path: a model deleted after open_manifest still loads") {
  TempDir dir;
  const auto path = dir / "m.safetensors";
  write_model(path, spec(4 << 20, 4, 4096));
  const Manifest m = open_manifest(path);
  std::filesystem::remove(path);
  const auto device = open_device("host");
  LoadOptions options = forced(Placement::staged);
  options.plan.direct_io = true;
  const Weights w = load(m, *device, options);
  // Where the file system refuses O_DIRECT (tmpfs) the note says so; it never says the path is gone.
  CAPTURE(w.plan().direct_io_reason);
  CHECK(w.plan().direct_io_reason.find("No such file") == std::string::npos);
  CHECK(verify(w).tensors == 4);
}

TEST_CASE("a file truncated during the load: the short read names the file and the tensor") {
  TempDir dir;
  const auto path = dir / "m.safetensors";
  for (Placement placement : {Placement::direct, Placement::staged}) {
    CAPTURE(placement_name(placement));
    write_model(path, spec(4 << 20, 16, 4096));  // a new file each time: the manifest keeps the one it opened
    const Manifest m = open_manifest(path);
    auto device = faulty("host");
    LoadOptions options = forced(placement);
    options.plan.io = IoEngine::pread;
    bool truncated = false;
    options.on_progress = [&](std::uint64_t, std::uint64_t) {
      if (truncated) return;
      truncated = true;
      std::filesystem::resize_file(path, m.tensors[1].pieces[0].offset);  // tensors 1.. are gone
    };
    expect_failure(m, *device, options, ErrorCode::bad_input,
                   {path.string(), "tensor 't000", "truncated during the load"});
  }
}

TEST_CASE("a file truncated during a zero_copy load: Error(io) from population, no signal, nothing leaked") {
  TempDir dir;
  const auto path = dir / "z.safetensors";
  write_model(path, spec(96 << 20, 12, 0));  // packed; populated in 32 MiB chunks
  const Manifest m = open_manifest(path);
  auto device = faulty("host");
  LoadOptions options;
  bool truncated = false;
  options.on_tensor_ready = [&](const TensorHandle&) {
    if (truncated) return;
    truncated = true;
    std::filesystem::resize_file(path, 40 << 20);  // another process cuts the file
  };
  expect_failure(m, *device, options, ErrorCode::io, {path.string(), "tensor 't000", "truncated during the load"});
  CHECK(truncated);
}

TEST_CASE("an allocation failure half-way releases the allocations made so far") {
  TempDir dir;
  write_model(dir / "m.safetensors", spec(1 << 20, 8, 0));
  const Manifest m = open_manifest(dir / "m.safetensors");
  for (const char* spec_name : {"host", "null"}) {
    CAPTURE(spec_name);
    auto device = faulty(spec_name);
    device->fail_allocation = 4;
    // The host would map this packed file zero_copy (no allocations): direct allocates per tensor.
    const bool host = std::string(spec_name) == "host";
    expect_failure(m, *device, forced(host ? std::optional(Placement::direct) : std::nullopt), ErrorCode::out_of_memory,
                   {"allocation 4"});
    CHECK(device->counters.uploads == 0);  // no data moved before every allocation succeeded
  }
  auto device = faulty("null");
  device->fail_staging = true;
  expect_failure(m, *device, forced(std::nullopt), ErrorCode::out_of_memory, {"staging"});
}

TEST_CASE("a failed transfer drains the uploads in flight and releases everything") {
  TempDir dir;
  write_model(dir / "m.safetensors", spec(2 << 20, 8, 0));
  const Manifest m = open_manifest(dir / "m.safetensors");
  for (const char* spec_name : {"host", "null"}) {
    auto device = faulty(spec_name, MemoryModel::discrete);
    device->fail_upload = 5;
    expect_failure(m, *device, forced(Placement::staged), ErrorCode::device, {"transfer failed"});
    CHECK(device->counters.uploads >= 5);
  }
}

TEST_CASE("a throwing ready callback fails the load; nothing leaks") {
  TempDir dir;
  write_model(dir / "m.safetensors", spec(1 << 20, 8, 0));
  const Manifest m = open_manifest(dir / "m.safetensors");
  for (Placement placement : {Placement::direct, Placement::staged}) {
    auto device = faulty("host");
    LoadOptions options = forced(placement);
    int ready = 0;
    options.on_tensor_ready = [&](const TensorHandle&) {
      if (++ready == 3) fail(ErrorCode::usage, "engine refused tensor 3");
    };
    expect_failure(m, *device, options, ErrorCode::usage, {"engine refused"});
  }
}

TEST_CASE("a ready callback throwing a non-lwload exception: the load fails with its message, on every placement") {
  TempDir dir;
  write_model(dir / "m.safetensors", spec(1 << 20, 8, 0));
  const Manifest m = open_manifest(dir / "m.safetensors");
  for (const std::optional<Placement> placement : kEveryPlacement) {
    auto device = faulty("host");
    LoadOptions options = forced(placement);
    int ready = 0;
    options.on_tensor_ready = [&](const TensorHandle&) {
      if (++ready == 2) throw std::runtime_error("engine ran out of patience");
    };
    try {
      load(m, *device, options);
      FAIL("the load succeeded");
    } catch (const std::exception& e) {
      CHECK_MESSAGE(std::string(e.what()).find("engine ran out of patience") != std::string::npos, e.what());
    }
    CHECK(device->counters.live_buffers == 0);
    CHECK(device->counters.live_staging == 0);
  }
}

TEST_CASE("two threads load the same model into separate Weights at once; both verify") {
  TempDir dir;
  write_model(dir / "m.safetensors", spec(4 << 20, 16, 0));
  const Manifest m = open_manifest(dir / "m.safetensors");
  for (std::optional<Placement> placement : {std::optional<Placement>{}, std::optional{Placement::staged}}) {
    auto a = faulty("host");
    auto b = faulty("host");
    std::exception_ptr error_a, error_b;
    std::size_t verified_a = 0, verified_b = 0;
    const auto run = [&](FaultyDevice& device, std::exception_ptr& error, std::size_t& verified) {
      try {
        const Weights w = load(m, device, forced(placement));
        verified = verify(w).tensors;
      } catch (...) {
        error = std::current_exception();
      }
    };
    std::thread ta(run, std::ref(*a), std::ref(error_a), std::ref(verified_a));
    std::thread tb(run, std::ref(*b), std::ref(error_b), std::ref(verified_b));
    ta.join();
    tb.join();
    CHECK(!error_a);
    CHECK(!error_b);
    CHECK(verified_a == m.tensors.size());
    CHECK(verified_b == m.tensors.size());
    CHECK(a->counters.live_buffers == 0);
    CHECK(b->counters.live_buffers == 0);
  }
}

TEST_CASE("cancellation from another thread at random points of a staged load: cancelled, or complete and verified") {
  TempDir dir;
  write_model(dir / "m.safetensors", spec(2 << 20, 32, 0));
  const Manifest m = open_manifest(dir / "m.safetensors");
  // How many progress steps a whole load reports, so cancellation points cover all of it and
  // past its end (some rounds must complete).
  int total_steps = 0;
  {
    auto device = faulty("host");
    LoadOptions options = forced(Placement::staged, 4 * 16 * 1024);
    options.on_progress = [&](std::uint64_t, std::uint64_t) { ++total_steps; };
    load(m, *device, options);
  }
  REQUIRE(total_steps > 1);
  std::mt19937 random(15);  // fixed seed: the same cancellation points every run
  int past_the_end = 0;     // rounds whose cancellation point lies past the last step
  for (int round = 0; round < 16; ++round) {
    auto device = faulty("host");
    LoadOptions options = forced(Placement::staged, 4 * 16 * 1024);
    options.cancel = std::make_shared<CancelToken>();
    // The other thread cancels once the load has reported `after` progress steps; where the
    // load is when that store lands is up to the scheduler: both outcomes are correct.
    const int after = static_cast<int>(random() % static_cast<unsigned>(total_steps + total_steps / 4 + 1));
    std::atomic<int> steps{0};
    options.on_progress = [&](std::uint64_t, std::uint64_t) { steps.fetch_add(1); };
    std::atomic<bool> done{false};
    std::thread canceller([&] {
      while (steps.load() < after && !done.load()) std::this_thread::yield();
      options.cancel->cancel();
    });
    bool cancelled = false;
    try {
      const Weights w = load(m, *device, options);
      done = true;
      CHECK(verify(w).tensors == m.tensors.size());
    } catch (const Error& e) {
      done = true;
      CHECK_MESSAGE(e.code() == ErrorCode::cancelled, e.what());
      cancelled = true;
    }
    canceller.join();
    CHECK(device->counters.live_buffers == 0);
    CHECK(device->counters.live_staging == 0);
    MESSAGE("round ", round, ": cancel after ", after, " steps -> ", std::string(cancelled ? "cancelled" : "complete"));
    // Past the last step the canceller can only fire once the load has returned: such a round
    // completes whatever the scheduler does.
    if (after > total_steps) {
      ++past_the_end;
      CHECK_MESSAGE(!cancelled, "cancelled after ", after, " steps of ", total_steps);
    }
  }
  REQUIRE(past_the_end > 0);  // the seed gives some (the cases above are not all cancellations)
  // And cancelled before it starts, a load is always cancelled.
  auto device = faulty("host");
  LoadOptions options = forced(Placement::staged, 4 * 16 * 1024);
  options.cancel = std::make_shared<CancelToken>();
  options.cancel->cancel();
  CHECK(lwload::test::error_of([&] { (void)load(m, *device, options); }).code() == ErrorCode::cancelled);
  CHECK(device->counters.live_buffers == 0);
  CHECK(device->counters.live_staging == 0);
}

TEST_CASE("cancellation releases everything, on every placement") {
  TempDir dir;
  write_model(dir / "m.safetensors", spec(2 << 20, 8, 4096));
  const Manifest m = open_manifest(dir / "m.safetensors");
  for (Placement placement : {Placement::direct, Placement::staged}) {
    auto device = faulty("host");
    LoadOptions options = forced(placement);
    options.cancel = std::make_shared<CancelToken>();
    options.on_progress = [&](std::uint64_t done, std::uint64_t) {
      if (done > 0) options.cancel->cancel();
    };
    expect_failure(m, *device, options, ErrorCode::cancelled, {"cancelled"});
  }
}

TEST_CASE("a device that declines an import gets the region's tensors direct, with the reason") {
  TempDir dir;
  write_model(dir / "m.safetensors", spec(1 << 20, 4, 4096));
  const Manifest m = open_manifest(dir / "m.safetensors");
  auto device = faulty("host");
  device->decline_import = true;
  const Plan plan = make_plan(m, device->info());
  CHECK(plan.count(Placement::zero_copy) == 4);
  {
    const Weights w = load(m, *device, plan);
    CHECK(w.plan().count(Placement::direct) == 4);
    CHECK(w.plan().imported_regions() == 0);
    CHECK(w.plan().regions.front().declined.find("at load: the device declined the import") == 0);
    CHECK(w.plan().tensors[0].reason.find(
              "the device declined the import: test device declines every import → direct") != std::string::npos);
    CHECK(w.plan().device_bytes == m.total_bytes());  // the re-plan's totals, not the first plan's
    CHECK(w.plan().mapped_bytes == 0);
    CHECK(verify(w).tensors == 4);
    CHECK(device->counters.live_buffers == 4);
  }
  CHECK(device->counters.live_buffers == 0);  // Weights released them
}

TEST_CASE("plans that do not fit or do not match fail before the first allocation") {
  TempDir dir;
  write_model(dir / "m.safetensors", spec(1 << 20, 4, 4096));
  const Manifest m = open_manifest(dir / "m.safetensors");
  auto device = faulty("null");
  device->mutable_info().caps.device_memory = 512 * 1024;
  expect_failure(m, *device, forced(std::nullopt), ErrorCode::does_not_fit,
                 {"524288", std::to_string(m.total_bytes())});
  CHECK(device->counters.allocations == 0);

  auto host = faulty("host");
  const Plan for_null = make_plan(m, open_device("null")->info());
  try {
    load(m, *host, for_null);
    FAIL("a plan for another device was accepted");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::usage);
  }
  CHECK(host->counters.allocations == 0);
}

// Run plainly, and again under tests/support/refuse.c (tests/meson.build, suite kernel_matrix),
// which names what it refuses in LWLOAD_REFUSED: the refusal is seen as such, and the fallback
// in force still makes a mapping resident and still turns a lost page into Error(io).
TEST_CASE(
    "kernel features: what the kernel refuses is seen, and the fallback still populates and still reports a lost "
    "page") {
  const char* env = std::getenv("LWLOAD_REFUSED");
  const std::string refused = env ? env : "";
  MESSAGE("refused: ", refused.empty() ? "nothing" : refused);
  const auto is_refused = [&](const std::string& what) {
    return refused == "all" || refused.find(what) != std::string::npos;
  };
  if (is_refused("populate")) {
    CHECK_FALSE(io::populate_read().available);
    CHECK(io::populate_read().error == EINVAL);
  }
  if (is_refused("cachestat")) {
    CHECK_FALSE(io::cachestat().available);
    CHECK(io::cachestat().error == ENOSYS);
  }
  if (is_refused("vm_readv")) {
    CHECK_FALSE(io::vm_readv().available);
    CHECK(io::vm_readv().error == EPERM);
  }
  if (is_refused("io_uring")) CHECK_FALSE(io::probe_io_uring().usable);

  TempDir dir;
  const auto path = dir / "resident.bin";
  const std::size_t page = page_size();
  const std::uint64_t size = 64 * page;
  {
    std::ofstream out(path, std::ios::binary);
    const std::vector<char> bytes(size, 'x');
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  const auto file = posix_file_system()->open(path);
  // Out of the page cache first, so residency is the mapping's doing.
  const int fd = file->native_handle();
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  const auto mapping = file->map(0, size, MapAccess::resident);
  REQUIRE(mapping);
  // Without MADV_POPULATE_READ the mapping was populated as it was made (MAP_POPULATE).
  if (!io::populate_read().available) CHECK(mapping->resident_bytes() == size);
  mapping->make_resident(0, size);
  CHECK(mapping->resident_bytes() == size);
  // The page-cache query in force (cachestat or mincore) sees what population brought in.
  CHECK(io::cached_bytes(*file, 0, size) == size);

  // Another process cuts the file: the lost pages are an Error(io) naming the file, no signal.
  std::filesystem::resize_file(path, page);
  const Error e = test::error_of([&] { mapping->make_resident(0, size); });
  CHECK(e.code() == ErrorCode::io);
  CHECK(std::string(e.what()).find(path.string()) != std::string::npos);
  CHECK_NOTHROW(mapping->make_resident(0, page));  // the page the file still has

  // A model's other files open beneath its folder: by openat2, or where a filter refuses openat2
  // (ENOSYS, as before Linux 5.6; EPERM, as older container profiles answer a call they do not
  // know) by the component walk — the containment rule held either way.
  const auto safetensors_of = [](std::size_t bytes, char fill) {
    const std::string header = "{\"w\":{\"dtype\":\"U8\",\"shape\":[" + std::to_string(bytes) +
                               "],\"data_offsets\":[0," + std::to_string(bytes) + "]}}      ";
    std::string out(8, '\0');
    out[0] = static_cast<char>(header.size());
    return out + header + std::string(bytes, fill);
  };
  const auto folder = dir / "model";
  std::filesystem::create_directory(folder);
  test::write_file(folder / "shard.safetensors", safetensors_of(64, 'i'));
  test::write_file(dir / "outside.safetensors", safetensors_of(64, 'o'));
  std::filesystem::create_symlink(dir / "outside.safetensors", folder / "link.safetensors");
  const auto index = folder / "model.safetensors.index.json";
  test::write_file(index, std::string_view(R"({"metadata":{},"weight_map":{"w":"shard.safetensors"}})"));
  const Manifest sharded = open_manifest(index);
  const Weights w = load(sharded, *open_device("host"));
  CHECK(verify(w).tensors == 1);
  test::write_file(index, std::string_view(R"({"metadata":{},"weight_map":{"w":"link.safetensors"}})"));
  const Error out = test::error_of([&] { open_manifest(index); });
  CHECK(out.code() == ErrorCode::bad_input);
  CHECK_MESSAGE(std::string(out.what()).find("link.safetensors") != std::string::npos, out.what());
}

namespace {

// Kernel pages of [0, length) of `path` in the page cache, as mincore(2) sees them: the test's own
// count, whatever lwload's page_cache uses.
std::uint64_t pages_in_cache(const std::filesystem::path& path, std::uint64_t length) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  void* map = ::mmap(nullptr, length, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  REQUIRE(map != MAP_FAILED);
  std::vector<unsigned char> vec((length + system_page_size() - 1) / system_page_size());
  const int rc = ::mincore(map, length, vec.data());
  ::munmap(map, length);
  REQUIRE(rc == 0);
  return static_cast<std::uint64_t>(std::count_if(vec.begin(), vec.end(), [](unsigned char v) { return v & 1; }));
}

// Out of the page cache, then exactly its first `cached` bytes read back in (no readahead past
// them). False where the kernel does not do as asked (a file system that keeps pages, or one that
// reads ahead anyway): the caller skips.
bool cache_only_head(const std::filesystem::path& path, std::uint64_t cached) {
  const std::uint64_t size = std::filesystem::file_size(path);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);  // this descriptor reads no more than it is asked
  std::vector<char> bytes(cached);
  const bool read = ::pread(fd, bytes.data(), bytes.size(), 0) == static_cast<ssize_t>(bytes.size());
  ::close(fd);
  return read && pages_in_cache(path, size) == cached / system_page_size();
}

}  // namespace

// Run plainly and under each refusal (suite kernel_matrix): without cachestat the page cache is
// sampled (a bounded number of pages per range), and what the plan and the load report is still
// right, each saying how it knows.
TEST_CASE("kernel features: residency without cachestat is sampled and still right and says so") {
  TempDir dir;
  const auto path = dir / "half.safetensors";
  synth::write_model(path, spec(16 << 20, 8, 0));  // 4096 kernel pages of 4 KiB: far more than are sampled
  const std::uint64_t size = std::filesystem::file_size(path);
  const std::uint64_t page = system_page_size();
  const std::uint64_t half = align_down(size / 2, page);
  const bool counted = io::cachestat().available;
  // Counts are in whole kernel pages (the header's page is cached, so every range from the first
  // tensor counts `half`, to a page). An estimate is within one sample's share of that when what
  // is cached is one run, as here (and as a file read in order and evicted is).
  const std::uint64_t slack = page + (counted ? 0 : size / io::kSampledPages);
  const auto near = [&](std::uint64_t got, std::uint64_t want) {
    INFO("got ", got, ", want ", want, " +- ", slack);
    CHECK(got + slack >= want);
    CHECK(got <= want + slack);
  };

  if (!test::available("page_cache_exact", cache_only_head(path, half),
                       "the kernel cached more (or less) than was read"))
    return;
  const Manifest m = open_manifest(path);
  const io::CachedCount count = io::count_cached(*m.opened[0].file, 0, size);
  CHECK(count.exact() == counted);
  CHECK(count.samples == (counted ? 0 : io::kSampledPages));
  near(count.bytes, half);

  auto device = open_device("host");
  LoadOptions lazy;
  lazy.plan.force = Placement::zero_copy;
  lazy.lazy = true;
  const Plan plan = make_plan(m, device->info(), lazy.plan);
  REQUIRE(plan.residency.size() == 1);
  const FileResidency& r = plan.residency[0];
  CHECK(r.known);
  CHECK(r.exact == counted);
  CHECK(r.samples == (counted ? 0 : io::kSampledPages));
  near(r.cached, half);
  const std::string json = plan_to_json(plan, m);
  CHECK(json.find(counted ? "\"exact\":true,\"samples\":0"
                          : "\"exact\":false,\"samples\":" + std::to_string(io::kSampledPages)) != std::string::npos);

  {  // Lazy: nothing is populated, so what is resident is counted (cachestat) or sampled.
    const Weights w = load(m, *device, lazy);
    CHECK(w.stats().resident_count == (counted ? ResidentCount::counted : ResidentCount::sampled));
    near(w.stats().resident_bytes, half);
  }
  {  // Populated: population is the count where the kernel has no cachestat, and it is the truth.
    LoadOptions populated;
    populated.plan.force = Placement::zero_copy;
    const Weights w = load(m, *device, populated);
    CHECK(w.stats().resident_count == (counted ? ResidentCount::counted : ResidentCount::populated));
    CHECK(w.stats().resident_bytes == w.stats().zero_copy_bytes);
    CHECK(pages_in_cache(path, size) * page >= w.stats().zero_copy_bytes);
    CHECK(io::count_cached(*m.opened[0].file, 0, size).bytes == size);  // every sample cached: exactly the whole
  }
}

// Under `refuse --at-most 1 all` (tests/meson.build, faults_refusals_once_per_process) the launcher
// answers each refused call itself and fails the run if any is made twice: every refusal is
// discovered once in the process and remembered, however many loads, plans and copies follow.
// Plainly, and under the other refusals, the same loads must simply work.
TEST_CASE("kernel features: each refusal is discovered once per process and not once per load") {
  TempDir dir;
  const auto path = dir / "m.safetensors";
  synth::write_model(path, spec(4 << 20, 8, 0));
  const auto options = [](std::optional<Placement> placement, bool lazy, IoEngine io) {
    LoadOptions o;
    o.plan.force = placement;
    o.plan.staging_budget = 4 * 64 * 1024;
    o.plan.io = io;
    o.lazy = lazy;
    return o;
  };
  const LoadOptions each[] = {
      options(Placement::zero_copy, false, IoEngine::auto_),  // populated (MADV_POPULATE_READ), counted (cachestat)
      options(Placement::zero_copy, true, IoEngine::auto_),   // lazy: counted without population
      options(Placement::direct, false, IoEngine::auto_),     // host allocations prefaulted (MADV_POPULATE_WRITE)
      options(Placement::staged, false, IoEngine::io_uring),  // io_uring asked for
      options(Placement::staged, false, IoEngine::pread),
  };
  for (int round = 0; round < 3; ++round) {
    for (const LoadOptions& o : each) {
      auto device = open_device("host");
      const Weights w = load(open_manifest(path), *device, o);
      CHECK(verify(w).tensors == 8);  // zero_copy tensors read back through the guarded copy (process_vm_readv)
      if (o.plan.io == IoEngine::io_uring)
        CHECK(w.plan().schedule.engine == (io::probe_io_uring().usable ? IoEngine::io_uring : IoEngine::pread));
    }
  }
}
