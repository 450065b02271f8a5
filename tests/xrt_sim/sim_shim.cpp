// Standing in as XRT's noop shim: loads Debian's (LWLOAD_XRT_NOOP_PATH, found at configure time)
// and points its device's buffer entry points at the simulation (see sim.hpp).
#include <dlfcn.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

#include "sim.hpp"

namespace {

// [mangled name of the noop shim's entry point, the simulation's replacement]. Made when asked: the
// library's constructor may run before its static initialisers.
std::vector<std::pair<const char*, void*>> taken_over() {
  return {
      {"_ZN8xrt_core4shimINS_11device_pcieEE8alloc_boEmj", reinterpret_cast<void*>(&xrt_sim::alloc_bo)},
      {"_ZN8xrt_core4shimINS_11device_pcieEE8alloc_boEPvmj", reinterpret_cast<void*>(&xrt_sim::alloc_userptr_bo)},
      {"_ZN8xrt_core4shimINS_11device_pcieEE7free_boEj", reinterpret_cast<void*>(&xrt_sim::free_bo)},
      {"_ZN8xrt_core4shimINS_11device_pcieEE6map_boEjb", reinterpret_cast<void*>(&xrt_sim::map_bo)},
      {"_ZN8xrt_core4shimINS_11device_pcieEE8unmap_boEjPv", reinterpret_cast<void*>(&xrt_sim::unmap_bo)},
      {"_ZN8xrt_core4shimINS_11device_pcieEE7sync_boEj18xclBOSyncDirectionmm",
       reinterpret_cast<void*>(&xrt_sim::sync_bo)},
      {"_ZN8xrt_core4shimINS_11device_pcieEE7copy_boEjjmmm", reinterpret_cast<void*>(&xrt_sim::copy_bo)},
      {"_ZNK8xrt_core4shimINS_11device_pcieEE17get_bo_propertiesEjP15xclBOProperties",
       reinterpret_cast<void*>(&xrt_sim::get_bo_properties)},
      {"_ZNK8xrt_core4shimINS_11device_pcieEE9export_boEj", reinterpret_cast<void*>(&xrt_sim::export_bo)},
      {"_ZN8xrt_core4shimINS_11device_pcieEE9import_boEi", reinterpret_cast<void*>(&xrt_sim::import_bo)},
      {"_ZN8xrt_core4shimINS_11device_pcieEE8exec_bufEj", reinterpret_cast<void*>(&xrt_sim::exec_buf)},
      {"_ZNK8xrt_core4shimINS_11device_pcieEE9exec_waitEi", reinterpret_cast<void*>(&xrt_sim::exec_wait)},
  };
}

[[noreturn]] void give_up(const char* what, const char* detail) {
  std::fprintf(stderr, "lwload xrt_sim: %s: %s\n", what, detail);
  std::abort();
}

struct Segments {
  std::uintptr_t base = 0;
  std::vector<std::pair<std::uintptr_t, std::uintptr_t>> data;  // loaded, not executable
  std::pair<std::uintptr_t, std::uintptr_t> relro{0, 0};
};

int collect(dl_phdr_info* info, std::size_t, void* arg) {
  auto* segments = static_cast<Segments*>(arg);
  if (info->dlpi_addr != segments->base) return 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    const std::uintptr_t lo = info->dlpi_addr + ph.p_vaddr, hi = lo + ph.p_memsz;
    if (ph.p_type == PT_LOAD && !(ph.p_flags & PF_X)) segments->data.emplace_back(lo, hi);
    if (ph.p_type == PT_GNU_RELRO) segments->relro = {lo, hi};
  }
  return 1;
}

// Replaces every pointer to `from` in the library's data (the noop device's vtable, and its base
// class's) with `to`. Vtables live in RELRO pages: made writable for the write, read-only again.
int redirect(const Segments& segments, void* from, void* to) {
  const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  int replaced = 0;
  for (const auto& [lo, hi] : segments.data) {
    for (std::uintptr_t p = (lo + 7) & ~std::uintptr_t{7}; p + sizeof(void*) <= hi; p += sizeof(void*)) {
      auto* slot = reinterpret_cast<void**>(p);
      if (*slot != from) continue;
      auto* first = reinterpret_cast<void*>(p & ~(page - 1));
      if (mprotect(first, page, PROT_READ | PROT_WRITE) != 0) give_up("mprotect", "cannot make a vtable writable");
      *slot = to;
      const bool relro = p >= segments.relro.first && p < segments.relro.second;
      if (relro) mprotect(first, page, PROT_READ);
      ++replaced;
    }
  }
  return replaced;
}

__attribute__((constructor)) void take_over_noop_shim() {
  void* noop = dlopen(LWLOAD_XRT_NOOP_PATH, RTLD_NOW | RTLD_GLOBAL);
  if (noop == nullptr) give_up("cannot load XRT's noop shim " LWLOAD_XRT_NOOP_PATH, dlerror());
  link_map* map = nullptr;
  if (dlinfo(noop, RTLD_DI_LINKMAP, &map) != 0 || map == nullptr) give_up("dlinfo", dlerror());
  Segments segments;
  segments.base = map->l_addr;
  dl_iterate_phdr(collect, &segments);
  for (const auto& [name, replacement] : taken_over()) {
    void* original = dlsym(noop, name);
    if (original == nullptr) give_up("XRT's noop shim lacks an entry point this simulation takes over", name);
    if (redirect(segments, original, replacement) == 0) give_up("no vtable slot holds", name);
  }
}

}  // namespace
