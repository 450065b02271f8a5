// Models as large as the machine (docs/ARCHITECTURE.md "Over-memory loads"): the machine's memory facts (MemAvailable,
// cgroup v1 and nested v2 limits, RLIMIT_AS), the plan's pinned / evictable / anonymous bytes against
// them, refusals before anything is read, --lazy, imports that pin falling back, sparse multi-TiB
// files, byte sums that would pass 2^64, and a real load in a cgroup smaller than the model.
#include <doctest/doctest.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <fstream>

#include "lwload/backend.hpp"
#include "lwload/error.hpp"
#include "lwload/loader.hpp"
#include "lwload/machine.hpp"
#include "lwload/plan.hpp"
#include "lwload/profile.hpp"
#include "support/test_support.hpp"
#include "synth/synth.hpp"

using namespace lwload;
using lwload::test::TempDir;
using test::error_of;

namespace {

constexpr std::uint64_t MiB = 1ull << 20;
constexpr std::uint64_t GiB = 1ull << 30;
constexpr std::uint64_t TiB = 1ull << 40;

Manifest synth_manifest(const TempDir& dir, const std::string& name, std::uint64_t total, std::uint32_t tensors = 8) {
  synth::SynthSpec spec;
  spec.format = "safetensors";
  spec.total_bytes = total;
  spec.tensor_count = tensors;
  spec.alignment = 4096;
  write_model(dir / name, spec);
  return open_manifest(dir / name);
}

// A machine with `available` bytes of MemAvailable and nothing else known.
MachineMemory machine_with(std::uint64_t available) {
  MachineMemory m;
  m.mem_total = m.mem_available = available;
  return m;
}

PlanOptions on(const MachineMemory& m, bool lazy = false) {
  PlanOptions o;
  o.machine = m;
  o.lazy = lazy;
  return o;
}

// A unified GPU as a simulated driver would describe it: imports (which pin or not), host-visible
// allocations, a budget of its own.
DeviceInfo unified_gpu(Pinning pins, std::uint64_t max_alloc = 1 * MiB) {
  DeviceInfo d;
  d.backend = "sim";
  d.name = "simulated iGPU";
  d.kind = DeviceKind::igpu;
  d.memory = MemoryModel::unified;
  d.caps.import_host_ptr = true;
  d.caps.import_pins = pins;
  d.caps.host_visible_alloc = true;
  d.caps.pinned_staging = true;
  d.caps.max_alloc = max_alloc;
  d.caps.device_memory = d.caps.memory_available = 64 * GiB;
  return d;
}

// A safetensors file of one U8 tensor of `bytes`, sparse: the header written, the rest a hole.
std::filesystem::path sparse_safetensors(const TempDir& dir, std::uint64_t bytes) {
  std::string header = "{\"w\":{\"dtype\":\"U8\",\"shape\":[" + std::to_string(bytes) + "],\"data_offsets\":[0," +
                       std::to_string(bytes) + "]}}";
  while ((8 + header.size()) % 4096 != 0) header += ' ';
  std::string file(8, '\0');
  for (int i = 0; i < 8; ++i) file[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  file += header;
  const auto path = dir / "sparse.safetensors";
  test::write_file(path, file);
  REQUIRE(::truncate(path.c_str(), static_cast<off_t>(file.size() + bytes)) == 0);
  return path;
}

void write_text(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

bool has(const std::string& text, std::string_view part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("machine facts: MemAvailable, cgroup v1 and nested v2 limits (the tightest headroom), from a tree") {
  TempDir root;
  write_text(root / "proc/meminfo", "MemTotal:       8000000 kB\nMemFree:  100 kB\nMemAvailable:   6000000 kB\n");

  SUBCASE("cgroup v2, nested: the tightest level wins, page cache counts as reclaimable") {
    write_text(root / "proc/self/cgroup", "0::/apps/model\n");
    write_text(root / "proc/self/mountinfo",
               "30 23 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n");
    write_text(root / "sys/fs/cgroup/apps/memory.max", "2147483648\n");  // 2 GiB, parent
    write_text(root / "sys/fs/cgroup/apps/memory.current", "1073741824\n");
    write_text(root / "sys/fs/cgroup/apps/memory.stat", "anon 536870912\nfile 536870912\n");
    write_text(root / "sys/fs/cgroup/apps/model/memory.max", "max\n");  // child: no limit of its own
    write_text(root / "sys/fs/cgroup/apps/model/memory.current", "4096\n");
    const MachineMemory m = machine_memory(root.path());
    CHECK(m.mem_available == 6000000ull * 1024);
    CHECK(m.cgroup_limit == 2 * GiB);
    CHECK(m.cgroup_headroom() == 2 * GiB - 512 * MiB);  // usage less its page cache
    CHECK(m.host_available() == 2 * GiB - 512 * MiB);
    CHECK(has(m.host_bound_by(), "cgroup v2"));
    CHECK(has(m.host_bound_by(), "apps memory.max"));

    // A tighter child limit wins over its parent's.
    write_text(root / "sys/fs/cgroup/apps/model/memory.max", "268435456\n");
    const MachineMemory tighter = machine_memory(root.path());
    CHECK(tighter.cgroup_limit == 256 * MiB);
    CHECK(has(tighter.host_bound_by(), "apps/model memory.max"));
  }

  SUBCASE("cgroup v1: memory.limit_in_bytes, hierarchical cache reclaimable; 'no limit' values ignored") {
    write_text(root / "proc/self/cgroup", "4:memory:/process_api/job\n3:cpu:/\n0::/\n");
    write_text(root / "proc/self/mountinfo",
               "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
               "35 31 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n");
    write_text(root / "sys/fs/cgroup/memory/process_api/memory.limit_in_bytes", "9223372036854771712\n");
    write_text(root / "sys/fs/cgroup/memory/process_api/job/memory.limit_in_bytes", "1073741824\n");
    write_text(root / "sys/fs/cgroup/memory/process_api/job/memory.usage_in_bytes", "314572800\n");
    write_text(root / "sys/fs/cgroup/memory/process_api/job/memory.stat", "cache 1\ntotal_cache 104857600\n");
    const MachineMemory m = machine_memory(root.path());
    CHECK(m.cgroup_limit == 1 * GiB);
    CHECK(m.cgroup_headroom() == 1 * GiB - 200 * MiB);
    CHECK(m.host_available() == 1 * GiB - 200 * MiB);
    CHECK(has(m.host_bound_by(), "cgroup v1"));
  }

  SUBCASE("cgroup v1 mounted at a cgroup below the root (a container's view): the path is taken from there") {
    // Inside a container the memory controller is often mounted with root /docker/<id>, while
    // /proc/self/cgroup still names the full path: the mount root is cut off the path.
    write_text(root / "proc/self/cgroup", "4:memory:/docker/c0ffee/job\n0::/\n");
    write_text(root / "proc/self/mountinfo",
               "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
               "35 31 0:31 /docker/c0ffee /sys/fs/cgroup/memory ro,relatime - cgroup cgroup rw,memory\n");
    write_text(root / "sys/fs/cgroup/memory/job/memory.limit_in_bytes", "536870912\n");
    write_text(root / "sys/fs/cgroup/memory/job/memory.usage_in_bytes", "104857600\n");
    write_text(root / "sys/fs/cgroup/memory/job/memory.stat", "total_cache 0\n");
    const MachineMemory m = machine_memory(root.path());
    CHECK(m.cgroup_limit == 512 * MiB);
    CHECK(m.cgroup_headroom() == 412 * MiB);
    CHECK(has(m.host_bound_by(), "cgroup v1"));
    CHECK(has(m.host_bound_by(), "memory/job memory.limit_in_bytes"));
  }

  SUBCASE("no cgroup limit: MemAvailable bounds") {
    write_text(root / "proc/self/cgroup", "0::/\n");
    const MachineMemory m = machine_memory(root.path());
    CHECK(m.cgroup_limit == 0);
    CHECK(m.host_available() == 6000000ull * 1024);
    CHECK(m.host_bound_by() == "MemAvailable");
  }
}

TEST_CASE("this machine's facts are read: MemAvailable known, and the plan reports them") {
  const MachineMemory m = machine_memory();
  CHECK(m.mem_available > 0);
  CHECK(m.host_available() > 0);
  TempDir dir;
  const Manifest manifest = synth_manifest(dir, "m.safetensors", 1 * MiB);
  const Plan plan = make_plan(manifest, open_device("host")->info());
  CHECK(plan.host.machine.mem_available > 0);
  CHECK(plan.host.evictable >= 1 * MiB);
  CHECK(plan.host.pinned == 0);
  CHECK(has(plan.host.verdict, "fits: "));
}

TEST_CASE("host zero-copy over available memory: refused with the numbers and --lazy; lazy maps it, not resident") {
  TempDir dir;
  const Manifest manifest = synth_manifest(dir, "m.safetensors", 8 * MiB);
  const DeviceInfo host = open_device("host")->info();
  const MachineMemory small = machine_with(4 * MiB);

  const Error refused = error_of([&] { make_plan(manifest, host, on(small)); });
  CHECK(refused.code() == ErrorCode::does_not_fit);
  CHECK(has(refused.what(), "resident at once"));
  CHECK(has(refused.what(), "4194304 bytes"));  // what the machine has
  CHECK(has(refused.what(), "MemAvailable"));
  CHECK(has(refused.what(), "--lazy"));
  CHECK(has(refused.what(), "nothing was read"));

  const Plan lazy = make_plan(manifest, host, on(small, true));
  CHECK(lazy.count(Placement::zero_copy) == manifest.tensors.size());
  CHECK(lazy.host.lazy);
  CHECK_FALSE(lazy.host.resident_at_ready);
  CHECK(lazy.host.evictable >= 8 * MiB);
  CHECK(lazy.host.resident < 4 * MiB);
  CHECK(has(lazy.host.verdict, "lazy: "));
  CHECK(has(lazy.host.verdict, "not made resident"));

  // The JSON says the same.
  const auto json = boost::json::parse(plan_to_json(lazy, manifest)).as_object();
  const auto& h = json.at("host_memory").as_object();
  CHECK(h.at("evictable").to_number<std::uint64_t>() == lazy.host.evictable);
  CHECK(h.at("available").to_number<std::uint64_t>() == 4 * MiB);
  CHECK(h.at("resident_at_ready").as_bool() == false);
  CHECK(h.at("bound_by").as_string() == "MemAvailable");

  // A cgroup tighter than MemAvailable bounds instead; the page cache counts against it.
  MachineMemory cg = machine_with(64 * GiB);
  cg.cgroup_limit = 6 * MiB;
  cg.cgroup_usage = 1 * MiB;
  cg.cgroup = "cgroup v2 /sys/fs/cgroup/x memory.max";
  const Error by_cgroup = error_of([&] { make_plan(manifest, host, on(cg)); });
  CHECK(by_cgroup.code() == ErrorCode::does_not_fit);
  CHECK(has(by_cgroup.what(), "cgroup v2 /sys/fs/cgroup/x memory.max"));
}

TEST_CASE("a pinning device: imports past free memory fall back to direct with the reason, in file order") {
  TempDir dir;
  // 8 tensors of 512 KiB in 1 MiB regions: four regions.
  const Manifest manifest = synth_manifest(dir, "m.safetensors", 4 * MiB);
  const MachineMemory machine = machine_with(2 * MiB + 512 * 1024);

  const Plan fits = make_plan(manifest, unified_gpu(Pinning::yes), on(machine_with(64 * GiB)));
  REQUIRE(fits.imported_regions() >= 4);
  CHECK(fits.count(Placement::zero_copy) == manifest.tensors.size());
  CHECK(fits.host.pinned_imports == fits.host.pinned);
  CHECK(fits.host.evictable == 0);

  const Plan plan = make_plan(manifest, unified_gpu(Pinning::yes), on(machine));
  CHECK(plan.count(Placement::zero_copy) > 0);
  CHECK(plan.count(Placement::direct) > 0);
  CHECK(plan.host.pinned_imports <= machine.mem_available);
  CHECK(plan.host.resident <= machine.mem_available);
  bool declined_seen = false;
  for (std::size_t r = 0; r < plan.regions.size(); ++r) {
    const ImportRegion& region = plan.regions[r];
    if (region.imported()) {
      CHECK_FALSE(declined_seen);  // the earliest regions stay imported
      continue;
    }
    declined_seen = true;
    CHECK(has(region.declined, "imports pin memory"));
    CHECK(has(region.declined, "2621440 bytes of host memory available (MemAvailable)"));
  }
  CHECK(declined_seen);
  for (const TensorPlan& tp : plan.tensors)
    if (tp.placement == Placement::direct) CHECK(has(tp.reason, "imports pin memory"));
  // The fallback's allocations are the device's, held to its own budget.
  CHECK(plan.host.device_allocations == plan.device_bytes);

  // A driver that does not say is counted as pinning, and says so.
  const Plan unknown = make_plan(manifest, unified_gpu(Pinning::unknown), on(machine));
  CHECK(unknown.count(Placement::direct) > 0);
  for (const ImportRegion& region : unknown.regions)
    if (!region.imported()) CHECK(has(region.declined, "the driver does not say"));

  // The same device with imports that do not pin: evictable pages, so no fallback — refused, or lazy.
  const Error evictable = error_of([&] { make_plan(manifest, unified_gpu(Pinning::no), on(machine)); });
  CHECK(evictable.code() == ErrorCode::does_not_fit);
  CHECK(has(evictable.what(), "--lazy"));
  const Plan lazy = make_plan(manifest, unified_gpu(Pinning::no), on(machine, true));
  CHECK(lazy.count(Placement::zero_copy) == manifest.tensors.size());
  CHECK_FALSE(lazy.host.resident_at_ready);
}

TEST_CASE("DeviceOverrides::import_pins makes any backend's imports pin (simulated drivers model both)") {
  DeviceOverrides pins;
  pins.import_pins = Pinning::yes;
  CHECK(open_device("host")->info().caps.import_pins == Pinning::no);
  const DeviceInfo host = open_device("host", pins)->info();
  CHECK(host.caps.import_pins == Pinning::yes);
  TempDir dir;
  const Manifest manifest = synth_manifest(dir, "m.safetensors", 4 * MiB);
  const Plan plan = make_plan(manifest, host, on(machine_with(64 * GiB)));
  CHECK(plan.host.pinned_imports >= 4 * MiB);
  CHECK(plan.host.evictable == 0);
  // A pinning host device past its memory: the fallback (direct) is the host's memory too, so the
  // load is refused with the numbers rather than half-pinned.
  const Error e = error_of([&] { make_plan(manifest, host, on(machine_with(2 * MiB))); });
  CHECK(e.code() == ErrorCode::does_not_fit);
}

TEST_CASE("a 4 TiB sparse file: refused with numbers, or lazy; the page cache counted exactly (no extrapolation)") {
  TempDir dir;
  const auto path = sparse_safetensors(dir, 4 * TiB);
  const Manifest manifest = open_manifest(path);
  REQUIRE(manifest.tensors.size() == 1);
  const DeviceInfo host = open_device("host")->info();
  const MachineMemory machine = machine_memory();

  const Error refused = error_of([&] { make_plan(manifest, host, on(machine)); });
  CHECK(refused.code() == ErrorCode::does_not_fit);
  CHECK(has(refused.what(), "4398046511104"));
  CHECK(has(refused.what(), "--lazy"));

  const Plan lazy = make_plan(manifest, host, on(machine, true));
  CHECK(lazy.count(Placement::zero_copy) == 1);
  CHECK(lazy.host.evictable >= 4 * TiB);
  CHECK_FALSE(lazy.host.resident_at_ready);
  REQUIRE(lazy.residency.size() == 1);
  CHECK(lazy.residency[0].known);
  CHECK(lazy.residency[0].span == 4 * TiB);
  // The header page may be cached (opening read it); the hole never is. A count, not 128 MiB.
  if (lazy.residency[0].exact) CHECK(lazy.residency[0].cached <= 64 * 1024);
  REQUIRE(lazy.regions.size() == 1);
  if (lazy.residency[0].exact) CHECK(lazy.regions[0].cached <= 64 * 1024);

  // The CLI says it before reading anything: refused (exit 1), or lazy with the numbers, in JSON too.
  std::string out;
  CHECK(test::run_lwload("plan " + path.string() + " --device host", &out) == 1);
  out.clear();
  CHECK(test::run_lwload("plan " + path.string() + " --device host --lazy --json", &out) == 0);
  const auto json = boost::json::parse(out).as_object();
  CHECK(json.at("host_memory").as_object().at("evictable").to_number<std::uint64_t>() >= 4 * TiB);
  CHECK(json.at("host_memory").as_object().at("resident_at_ready").as_bool() == false);
  out.clear();
  CHECK(test::run_lwload("plan " + path.string() + " --device host --lazy", &out) == 0);
  CHECK(has(out, "memory verdict:      lazy: "));
  CHECK(has(out, "host memory:"));
}

TEST_CASE("byte sums that would pass 2^64 are refused, not wrapped") {
  Manifest m;
  m.format = "safetensors";
  m.files = {"huge.bin"};
  for (int i = 0; i < 3; ++i) {
    TensorInfo t;
    t.name = "t" + std::to_string(i);
    t.dtype = DType::U8;
    t.bytes = 1ull << 63;
    t.shape = {static_cast<std::int64_t>(t.bytes - 1)};
    t.pieces = {Piece{0, 0, t.bytes}};
    m.tensors.push_back(t);
  }
  const DeviceInfo null = open_device("null")->info();  // no memory limit of its own
  const Error e = error_of([&] { make_plan(m, null, on(machine_with(0))); });
  CHECK(e.code() == ErrorCode::does_not_fit);
  CHECK(has(e.what(), "passes 2^64"));
}

// VmSize of this process, in bytes (0 when unreadable).
std::uint64_t vm_size_bytes() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmSize:", 0) == 0) return std::stoull(line.substr(7)) * 1024;
  return 0;
}

TEST_CASE("RLIMIT_AS below the model's size: the plan refuses or falls back before any read, natively") {
  if (!test::can_limit_address_space()) return;
  TempDir dir;
  const auto path = sparse_safetensors(dir, 2 * GiB);
  const Manifest manifest = open_manifest(path);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // In the child: address space for what it has now plus 512 MiB, a quarter of the model.
    rlimit limit{};
    MachineMemory now = machine_memory();
    limit.rlim_cur = limit.rlim_max = now.address_space_used + 512 * MiB;
    if (::setrlimit(RLIMIT_AS, &limit) != 0) ::_exit(10);
    int status = 0;
    try {
      const MachineMemory m = machine_memory();
      if (m.address_space_limit == 0 || m.address_space_left() > 600 * MiB) ::_exit(11);
      // The mappings counted (the sum of /proc/self/maps) are what the kernel counts (VmSize), natively.
      const std::uint64_t vm_size = vm_size_bytes();
      const std::uint64_t counted = m.address_space_used;
      if ((counted > vm_size ? counted - vm_size : vm_size - counted) > MiB)
        ::_exit(12);  // one thread: no mapping moves between the reads
      // Host: every placement is in this process's address space, lazy or not: refused up front.
      for (const bool lazy : {false, true}) {
        try {
          auto device = open_device("host");
          LoadOptions options;
          options.lazy = lazy;
          load(manifest, *device, options);
          status |= 1;  // loaded 2 GiB in 512 MiB of address space?
        } catch (const Error& e) {
          if (e.code() != ErrorCode::does_not_fit || std::string(e.what()).find("RLIMIT_AS") == std::string::npos)
            status |= 2;
        }
      }
      // A device whose allocations are its own (staged): the region is declined, the tensor staged, saying why.
      DeviceInfo gpu = unified_gpu(Pinning::no, UINT64_MAX);
      gpu.caps.host_visible_alloc = false;
      const Plan plan = make_plan(manifest, gpu, on(m, true));
      if (plan.count(Placement::staged) != 1 || plan.tensors[0].reason.find("RLIMIT_AS") == std::string::npos)
        status |= 4;
    } catch (...) {
      status |= 8;
    }
    ::_exit(status);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));  // never killed
  CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("RLIMIT_AS: a soft limit below an unlimited hard limit is the limit") {
  // Shells and container runtimes lower the soft limit (ulimit -Sv) and leave the hard one
  // unlimited; the soft limit is what the kernel enforces.
  if (!test::can_limit_address_space()) return;
  rlimit now{};
  REQUIRE(::getrlimit(RLIMIT_AS, &now) == 0);
  if (now.rlim_max != RLIM_INFINITY) return;  // a hard limit already set here: this case cannot be made
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    const std::uint64_t soft = machine_memory().address_space_used + 4 * GiB;
    rlimit limit{};
    limit.rlim_cur = soft;
    limit.rlim_max = RLIM_INFINITY;
    if (::setrlimit(RLIMIT_AS, &limit) != 0) ::_exit(10);
    const MachineMemory m = machine_memory();
    if (m.address_space_limit != soft) ::_exit(11);
    if (m.address_space_left() > 4 * GiB) ::_exit(12);
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

// A real cgroup smaller than the model: v1 (memory.limit_in_bytes) or v2 (memory.max), where this
// process may make one (root, a writable memory controller). The load is refused (non-lazy) or
// loads lazily — never OOM-killed.
TEST_CASE("lwload load in a cgroup whose memory limit is below the model's size: refused or lazy, never killed") {
  std::string parent;  // a writable cgroup directory with the memory controller, and its version
  std::string limit_file;
  {
    std::ifstream in("/proc/self/cgroup");
    for (std::string line; std::getline(in, line);) {
      const auto a = line.find(':'), b = line.find(':', a + 1);
      const std::string ctl = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
      if (ctl.find("memory") != std::string::npos &&
          std::filesystem::exists("/sys/fs/cgroup/memory" + path + "/memory.limit_in_bytes")) {
        parent = "/sys/fs/cgroup/memory" + path;
        limit_file = "memory.limit_in_bytes";
      } else if (ctl.empty() && parent.empty()) {
        const std::string dir = "/sys/fs/cgroup" + path;
        std::ifstream controllers(dir + "/cgroup.subtree_control");
        std::string list;
        std::getline(controllers, list);
        if (list.find("memory") != std::string::npos) {
          parent = dir;
          limit_file = "memory.max";
        }
      }
    }
  }
  const std::string cg = parent + "/lwload_test_" + std::to_string(::getpid());
  if (parent.empty() || ::access(parent.c_str(), W_OK) != 0 || !std::filesystem::create_directory(cg)) {
    MESSAGE("no writable memory cgroup here: the limits are covered by the injected-tree tests");
    return;
  }
  // Removed however the case ends; a cgroup whose last process just exited may be busy a moment.
  struct Remove {
    std::string dir;
    ~Remove() {
      for (int i = 0; i < 100 && ::rmdir(dir.c_str()) != 0 && errno == EBUSY; ++i) ::usleep(10000);
    }
  } remove{cg};
  TempDir dir;
  synth::SynthSpec spec;
  spec.format = "safetensors";
  spec.total_bytes = 192 * MiB;
  spec.tensor_count = 16;
  spec.alignment = 4096;
  write_model(dir / "m.safetensors", spec);
  { std::ofstream(cg + "/" + limit_file) << (96 * MiB) << '\n'; }
  const char* exe = std::getenv("LWLOAD_EXE");
  REQUIRE(exe != nullptr);
  const auto in_cgroup = [&](const std::string& args) {
    // The shell moves itself into the cgroup, then becomes lwload.
    return "sh -c 'echo $$ > " + cg + "/cgroup.procs && exec " + exe + " " + args + "' 2>&1";
  };
  std::string out;
  const int refused = test::run_command(in_cgroup("load " + (dir / "m.safetensors").string() + " --device host"), &out);
  INFO(out);
  CHECK(refused == 1);  // does_not_fit; -1 would be a signal (the OOM killer)
  CHECK(has(out, "resident at once"));
  CHECK(has(out, limit_file));
  CHECK(has(out, "--lazy"));
  out.clear();
  const int lazy =
      test::run_command(in_cgroup("load " + (dir / "m.safetensors").string() + " --device host --lazy"), &out);
  INFO(out);
  CHECK(lazy == 0);
  out.clear();
  const int planned =
      test::run_command(in_cgroup("plan " + (dir / "m.safetensors").string() + " --device host --lazy"), &out);
  CHECK(planned == 0);
  CHECK(has(out, limit_file));
}

TEST_CASE("profile's contract holds the load to the plan's memory figures and says lazy loads are not resident") {
  profile::ContractInputs in;
  in.memory = MemoryModel::unified;
  in.model_bytes = in.zero_copy_bytes = 100 * MiB;
  in.largest_tensor = 10 * MiB;
  in.lazy = true;
  in.resident_bytes = 0;
  in.host.lazy = true;
  in.host.evictable = 100 * MiB;
  in.host.resident = 1 * MiB;
  in.host.machine = machine_with(50 * MiB);
  const profile::MemoryFigures base{10 * MiB, 5 * MiB, 5 * MiB, 0};
  const profile::MemoryFigures small{12 * MiB, 6 * MiB, 6 * MiB, 0};
  const profile::Contract ok = profile::evaluate_contract(in, base, small);
  CHECK(ok.held);
  CHECK(has(ok.verdict, "machine: planned resident"));
  CHECK(has(ok.verdict, "not counted: lazy"));
  CHECK(has(ok.verdict, "lazy: zero_copy pages not required resident (0.0 MiB of 100.0 MiB resident at ready)"));
  // Growth past what the machine had breaks the contract.
  const profile::MemoryFigures grown{80 * MiB, 6 * MiB, 75 * MiB, 0};
  const profile::Contract over = profile::evaluate_contract(in, base, grown);
  CHECK_FALSE(over.held);
  CHECK(has(over.verdict, "> 50.0 MiB available"));
}

TEST_CASE("lwload profile --lazy: the report carries the plan's host memory and the contract checks it") {
  TempDir dir;
  (void)synth_manifest(dir, "m.safetensors", 4 * MiB);
  std::string out;
  REQUIRE(test::run_lwload("profile " + (dir / "m.safetensors").string() + " --device host --lazy --json -", &out) ==
          0);
  const auto report = boost::json::parse(out).as_object();
  const auto& h = report.at("host_memory").as_object();
  CHECK(h.at("lazy").as_bool());
  CHECK(h.at("resident_at_ready").as_bool() == false);
  CHECK(h.at("evictable").to_number<std::uint64_t>() >= 4 * MiB);
  CHECK(h.at("available").to_number<std::uint64_t>() > 0);
  const std::string verdict(report.at("contract").as_object().at("verdict").as_string());
  CHECK(has(verdict, "machine: planned resident"));
  CHECK(has(verdict, "lazy: zero_copy pages not required resident"));
}

TEST_CASE("the host device's memory is the tighter of the memory available and the address space RLIMIT_AS leaves") {
  if (!test::can_limit_address_space()) return;
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    const MachineMemory before = machine_memory();
    if (before.host_available() < 256 * MiB) ::_exit(0);  // nothing tighter to set below it
    // Address space for what the child maps now plus a quarter of the memory available: tighter.
    rlimit limit{};
    limit.rlim_cur = limit.rlim_max = before.address_space_used + before.host_available() / 4;
    if (::setrlimit(RLIMIT_AS, &limit) != 0) ::_exit(10);
    try {
      const DeviceInfo info = open_device("host")->info();
      if (info.caps.device_memory == 0 || info.caps.device_memory > before.host_available() / 4) ::_exit(11);
      if (info.caps.memory_available != info.caps.device_memory) ::_exit(12);
      bool named = false;
      for (const auto& [key, value] : info.details)
        named = named || (key == "memory" && value.find("RLIMIT_AS") != std::string::npos);
      if (!named) ::_exit(13);
    } catch (...) {
      ::_exit(14);
    }
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}
