// Machine memory facts (lwload/machine.hpp): /proc and the cgroup file systems, read as text.
#include "lwload/machine.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <limits>
#include <sstream>
#include <string_view>
#include <vector>

namespace lwload {
namespace {

constexpr std::uint64_t kNone = std::numeric_limits<std::uint64_t>::max();
// cgroup v1 writes "no limit" as the largest page count it keeps (9223372036854771712 with 4 KiB
// pages): anything this large is no limit.
constexpr std::uint64_t kV1Unlimited = 1ull << 62;

// The leading decimal number of `text` (after blanks), or `otherwise`.
std::uint64_t parse_u64(std::string_view text, std::uint64_t otherwise = 0) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) return otherwise;
  text.remove_prefix(first);
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc{} ? value : otherwise;
}

std::string first_line(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// "key value" files (memory.stat): the value of `key`, or `otherwise`.
std::uint64_t stat_value(const std::filesystem::path& path, std::string_view key, std::uint64_t otherwise) {
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);)
    if (line.size() > key.size() && line.compare(0, key.size(), key) == 0 && line[key.size()] == ' ')
      return parse_u64(std::string_view(line).substr(key.size() + 1), otherwise);
  return otherwise;
}

// "Key:   N kB" in /proc/meminfo or /proc/self/status, in bytes (0 when absent).
std::uint64_t kib_field(const std::filesystem::path& path, std::string_view key) {
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);)
    if (line.size() > key.size() && line.compare(0, key.size(), key) == 0 && line[key.size()] == ':') {
      const std::uint64_t kib = parse_u64(std::string_view(line).substr(key.size() + 1));
      return kib > kNone / 1024 ? kNone : kib * 1024;
    }
  return 0;
}

struct Mount {
  std::string root;   // the mount's root inside the cgroup file system
  std::string point;  // where it is mounted
  std::string type;   // "cgroup" or "cgroup2"
  std::string super;  // super options ("rw,memory")
};

std::vector<Mount> cgroup_mounts(const std::filesystem::path& mountinfo) {
  std::vector<Mount> mounts;
  std::ifstream in(mountinfo);
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::vector<std::string> f;
    for (std::string w; fields >> w;) f.push_back(w);
    std::size_t dash = 0;
    while (dash < f.size() && f[dash] != "-") ++dash;
    if (f.size() < 5 || dash + 1 >= f.size()) continue;
    const std::string& type = f[dash + 1];
    if (type != "cgroup" && type != "cgroup2") continue;
    mounts.push_back({f[3], f[4], type, dash + 3 < f.size() ? f[dash + 3] : std::string()});
  }
  return mounts;
}

bool has_option(const std::string& options, std::string_view want) {
  std::string_view rest(options);
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    if (rest.substr(0, comma) == want) return true;
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return false;
}

// The directory of cgroup `path` under `mount`, with `root` prefixed (tests).
std::filesystem::path cgroup_dir(const std::filesystem::path& root, const Mount& mount, std::string path) {
  if (mount.root != "/" && path.compare(0, mount.root.size(), mount.root) == 0) path.erase(0, mount.root.size());
  std::filesystem::path dir = root / std::filesystem::path(mount.point).relative_path();
  return path.empty() || path == "/" ? dir : dir / std::filesystem::path(path).relative_path();
}

// One limit found on the walk; the tightest headroom wins.
void consider(MachineMemory& m, std::uint64_t limit, std::uint64_t usage, std::uint64_t file, std::string where) {
  MachineMemory candidate;
  candidate.cgroup_limit = limit;
  candidate.cgroup_usage = usage;
  candidate.cgroup_file = file;
  if (m.cgroup_limit != 0 && candidate.cgroup_headroom() >= m.cgroup_headroom()) return;
  m.cgroup_limit = limit;
  m.cgroup_usage = usage;
  m.cgroup_file = file;
  m.cgroup = std::move(where);
}

// cgroup v2: memory.max at the process's cgroup and each ancestor up to the mount's root.
void walk_v2(MachineMemory& m, const std::filesystem::path& dir, const std::filesystem::path& top) {
  for (std::filesystem::path d = dir;; d = d.parent_path()) {
    const std::string max = first_line(d / "memory.max");
    if (!max.empty() && max != "max") {
      const std::uint64_t limit = parse_u64(max, 0);
      const std::uint64_t usage = parse_u64(first_line(d / "memory.current"), 0);
      if (limit != 0)
        consider(m, limit, usage, stat_value(d / "memory.stat", "file", 0), "cgroup v2 " + d.string() + " memory.max");
    }
    if (d == top || d == d.parent_path() || d.string().size() <= top.string().size()) break;
  }
}

// cgroup v1: memory.limit_in_bytes at the process's cgroup and each ancestor whose use_hierarchy
// makes its limit cover its children.
void walk_v1(MachineMemory& m, const std::filesystem::path& dir, const std::filesystem::path& top) {
  for (std::filesystem::path d = dir;; d = d.parent_path()) {
    const std::uint64_t limit = parse_u64(first_line(d / "memory.limit_in_bytes"), 0);
    if (limit != 0 && limit < kV1Unlimited) {
      const std::uint64_t usage = parse_u64(first_line(d / "memory.usage_in_bytes"), 0);
      const std::uint64_t file =
          stat_value(d / "memory.stat", "total_cache", stat_value(d / "memory.stat", "cache", 0));
      consider(m, limit, usage, file, "cgroup v1 " + d.string() + " memory.limit_in_bytes");
    }
    if (d == top || d == d.parent_path() || d.string().size() <= top.string().size()) break;
    // The parent's limit covers this cgroup only with hierarchy on (always, on kernels since 5.x).
    if (first_line(d.parent_path() / "memory.use_hierarchy") == "0") break;
  }
}

void read_cgroups(MachineMemory& m, const std::filesystem::path& root) {
  const std::vector<Mount> mounts = cgroup_mounts(root / "proc/self/mountinfo");
  std::ifstream in(root / "proc/self/cgroup");
  for (std::string line; std::getline(in, line);) {
    // "ID:CONTROLLERS:PATH"; v2 is "0::PATH".
    const auto a = line.find(':');
    const auto b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1);
    const std::string path = line.substr(b + 1);
    const bool v2 = line.compare(0, a, "0") == 0 && controllers.empty();
    if (!v2 && !has_option(controllers, "memory")) continue;
    for (const Mount& mount : mounts) {
      if (v2 ? mount.type != "cgroup2" : (mount.type != "cgroup" || !has_option(mount.super, "memory"))) continue;
      const std::filesystem::path top = root / std::filesystem::path(mount.point).relative_path();
      const std::filesystem::path dir = cgroup_dir(root, mount, path);
      if (v2) walk_v2(m, dir, top);
      else walk_v1(m, dir, top);
      break;
    }
  }
}

// A 32-bit userland (armeabi-v7a, Raspberry Pi OS 32-bit) maps at most 3 GiB under the usual
// 3G/1G split, whatever RLIMIT_AS says: that bounds it too.
constexpr std::uint64_t kPointerSpace = sizeof(void*) < 8 ? 3ull << 30 : 0;

// The process's mappings now: the sum of /proc/self/maps' ranges. Not VmSize: under qemu-user
// (an ARM userland emulated on x86-64) /proc/self/status is the emulator's own, with its
// reservation for the whole guest address space, while /proc/self/maps is the guest's. The kernel's
// [vsyscall] page is not the process's and VmSize leaves it out too. VmSize when maps is unreadable.
std::uint64_t mapped_bytes() {
  std::ifstream in("/proc/self/maps");
  std::uint64_t total = 0;
  bool any = false;
  for (std::string line; std::getline(in, line);) {
    if (line.find("[vsyscall]") != std::string::npos) continue;
    std::uint64_t start = 0, end = 0;
    const char* const last = line.data() + line.size();
    const auto first = std::from_chars(line.data(), last, start, 16);
    if (first.ec != std::errc{} || first.ptr == last || *first.ptr != '-') continue;
    if (std::from_chars(first.ptr + 1, last, end, 16).ec != std::errc{} || end < start) continue;
    total += end - start;
    any = true;
  }
  return any ? total : kib_field("/proc/self/status", "VmSize");
}

void read_address_space(MachineMemory& m) {
  rlimit limit{};
  std::uint64_t bound = kPointerSpace;
  if (::getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
    bound = bound == 0 ? static_cast<std::uint64_t>(limit.rlim_cur) : std::min<std::uint64_t>(bound, limit.rlim_cur);
  if (bound != 0) {
    m.address_space_limit = bound;
    m.address_space_used = mapped_bytes();
  }
}

}  // namespace

std::uint64_t MachineMemory::cgroup_headroom() const noexcept {
  if (cgroup_limit == 0) return kNone;
  const std::uint64_t held = cgroup_usage > cgroup_file ? cgroup_usage - cgroup_file : 0;
  return cgroup_limit > held ? cgroup_limit - held : 0;
}

std::uint64_t MachineMemory::host_available() const noexcept {
  const std::uint64_t cg = cgroup_headroom();
  if (mem_available == 0) return cg == kNone ? 0 : cg;
  return std::min(mem_available, cg);
}

std::string MachineMemory::host_bound_by() const {
  const std::uint64_t cg = cgroup_headroom();
  if (cg != kNone && (mem_available == 0 || cg < mem_available)) return cgroup;
  return mem_available ? "MemAvailable" : "";
}

std::uint64_t MachineMemory::address_space_left() const noexcept {
  if (address_space_limit == 0) return kNone;
  return address_space_limit > address_space_used ? address_space_limit - address_space_used : 0;
}

MachineMemory machine_memory(const std::filesystem::path& root) {
  MachineMemory m;
  m.mem_total = kib_field(root / "proc/meminfo", "MemTotal");
  m.mem_available = kib_field(root / "proc/meminfo", "MemAvailable");
  read_cgroups(m, root);
  read_address_space(m);
  return m;
}

MachineMemory machine_memory() { return machine_memory("/"); }

}  // namespace lwload
