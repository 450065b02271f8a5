// lwload doctor: what the kernel (and any sandbox around the process) gave lwload, one line per
// feature, and the fallback in force where it refused. On an unfamiliar board the first thing to
// run: a 5.10 kernel without MADV_POPULATE_READ, a seccomp policy refusing io_uring or
// process_vm_readv, 16 or 64 KiB pages, a 32-bit userland all show here.
#include <sys/resource.h>
#include <sys/utsname.h>

#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include <boost/json.hpp>

#include "cli.hpp"
#include "core/align.hpp"
#include "io/io_engine.hpp"
#include "io/kernel_features.hpp"
#include "lwload/error.hpp"

namespace lwload::cli {
namespace {

struct Line {
  std::string key;     // "population"
  std::string method;  // what lwload uses: "MADV_POPULATE_READ", "MAP_POPULATE"
  bool fallback;       // a fallback is in force
  std::string detail;  // why, or what it means
};

std::string refused(const char* call, const io::KernelFeature& f) { return str(call, " refused (", f.refusal(), ")"); }

std::vector<Line> kernel_lines() {
  std::vector<Line> lines;
  const auto& populate = io::populate_read();
  if (populate.available)
    lines.push_back({"population", "MADV_POPULATE_READ", false, "zero-copy pages made resident in place, no copy"});
  else
    lines.push_back(
        {"population", "MAP_POPULATE", true,
         refused("MADV_POPULATE_READ", populate) +
             " (Linux < 5.14): regions populated as they are mapped, no copy; a lost page found by one guarded read"});
  const auto& cachestat = io::cachestat();
  if (cachestat.available) lines.push_back({"page_cache", "cachestat", false, "page-cache residency per file range"});
  else
    lines.push_back({"page_cache", "mincore", true,
                     refused("cachestat", cachestat) + " (Linux < 6.5): mincore over a transient mapping"});
  const auto& uring = io::probe_io_uring();
  if (uring.usable)
    lines.push_back({"io_uring", "io_uring", false, "usable (--io io_uring; the default reads by pread)"});
  else
    lines.push_back({"io_uring", "pread", true,
                     (uring.note.empty() ? std::string("not usable") : uring.note) + ": reads by pread"});
  const auto& vm_readv = io::vm_readv();
  if (vm_readv.available)
    lines.push_back({"guarded_copy", "process_vm_readv", false,
                     "verify and read-back through mappings: a lost page is an error, not SIGBUS"});
  else
    lines.push_back({"guarded_copy", "pipe", true,
                     refused("process_vm_readv", vm_readv) + ": verify and read-back copy through a pipe"});
  const std::size_t page = page_size(), system_page = system_page_size();
  lines.push_back({"page_size", str(page), page != system_page,
                   page == system_page ? str(page / 1024, " KiB pages: regions and imports round to them")
                                       : str("set for tests; the kernel's is ", system_page)});
  rlimit as{};
  const bool limited = ::getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY;
  const unsigned bits = sizeof(void*) * 8;
  std::string space = str(bits, "-bit pointers");
  if (bits == 32) space += " (at most 4 GiB of address space: mappings of large models may not fit)";
  space +=
      limited ? str(", RLIMIT_AS ", format_bytes(static_cast<std::uint64_t>(as.rlim_cur))) : ", RLIMIT_AS unlimited";
  lines.push_back({"address_space", str(bits, "-bit"), bits == 32 || limited, space});
  return lines;
}

}  // namespace

int cmd_doctor(int argc, char** argv) {
  Args args("doctor",
            "What the kernel gave lwload: the features found and the fallbacks in force (population, page-cache "
            "query, io_uring, guarded copy, page size, address space).",
            {}, {{"--json", "", "print one JSON object", ""}});
  if (!args.parse(argc, argv)) return exit_ok;
  utsname uts{};
  const std::string kernel = ::uname(&uts) == 0 ? str(uts.sysname, ' ', uts.release, ' ', uts.machine) : "unknown";
  const std::vector<Line> lines = kernel_lines();
  if (args.flag("--json")) {
    boost::json::object out{{"kernel", kernel}};
    for (const Line& l : lines)
      out[l.key] = boost::json::object{{"method", l.method}, {"fallback", l.fallback}, {"detail", l.detail}};
    std::cout << boost::json::serialize(out) << '\n';
    return exit_ok;
  }
  std::cout << "kernel: " << kernel << '\n';
  for (const Line& l : lines)
    std::cout << l.key << ": " << l.method << (l.fallback ? " (fallback)" : "") << " — " << l.detail << '\n';
  return exit_ok;
}

}  // namespace lwload::cli
