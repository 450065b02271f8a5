#include "backends/host/host_capacity.hpp"

#include <sys/resource.h>

#include <charconv>
#include <fstream>
#include <sstream>
#include <string_view>

namespace lwload::host {
namespace {

std::uint64_t parse_u64(std::string_view text) {
  std::uint64_t value = 0;
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) return 0;
  text.remove_prefix(first);
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc{} ? value : 0;
}

std::string read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// MemAvailable from /proc/meminfo, in bytes (0 when absent).
std::uint64_t mem_available() {
  std::ifstream in("/proc/meminfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("MemAvailable:", 0) == 0) return parse_u64(std::string_view(line).substr(13)) * 1024;
  return 0;
}

// What the process's cgroup v2 still allows (0 when unlimited or not on cgroup v2).
std::uint64_t cgroup_left() {
  std::ifstream in("/proc/self/cgroup");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("0::", 0) != 0) continue;
    const std::string dir = "/sys/fs/cgroup" + line.substr(3);
    const std::string max = read_first_line(dir + "/memory.max");
    if (max.empty() || max == "max") return 0;
    const std::uint64_t limit = parse_u64(max);
    const std::uint64_t used = parse_u64(read_first_line(dir + "/memory.current"));
    return limit > used ? limit - used : 1;
  }
  return 0;
}

// What RLIMIT_AS leaves of the address space (0 when unlimited).
std::uint64_t address_space_left() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return 0;
  std::ifstream in("/proc/self/status");
  std::uint64_t used = 0;
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmSize:", 0) == 0) used = parse_u64(std::string_view(line).substr(7)) * 1024;
  return limit.rlim_cur > used ? limit.rlim_cur - used : 1;
}

}  // namespace

HostCapacity host_capacity() {
  HostCapacity least;
  const auto consider = [&](std::uint64_t bytes, const char* name) {
    if (bytes != 0 && (least.bytes == 0 || bytes < least.bytes)) least = {bytes, name};
  };
  consider(mem_available(), "MemAvailable");
  consider(cgroup_left(), "cgroup memory.max");
  consider(address_space_left(), "RLIMIT_AS");
  return least;
}

}  // namespace lwload::host
