// The peer a ggml application author would pick: llama.cpp's own model loader
// (llama_model_load_from_file, from the prebuilt libllama of the same llama.cpp source as the ggml
// the adapter links), measured the way examples/ggml_matvec measures its loads, for
// docs/BENCHMARKS.md (scripts/bench/ggml.sh). Prints one JSON line:
//   {"loader": "llama.cpp", "backend": ..., "peak_rss_growth": bytes, "anon_growth": bytes, "load_seconds": s}
//
//   llama_load MODEL.gguf [--backend cpu|vulkan] [--load-mode auto|none|mmap] [--touch]
// cpu: no layer offloaded (the weights stay in llama.cpp's mmap, as `use_mmap` loads them);
// vulkan: every layer offloaded to ggml's first Vulkan device. --touch: once loaded, reads one byte
// of every page of the file through a mapping of it and adds "touch_seconds" — llama.cpp keeps its
// own mapping private, and a second mapping of the same file faults in the same page-cache pages,
// which is what touching the weights costs on a model larger than memory.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>

#include <ggml-backend.h>
#include <llama.h>

namespace {

struct Memory {
  long long rss = 0, hwm = 0, anon = 0;
};
Memory memory_now() {
  Memory m;
  std::ifstream in("/proc/self/status");
  std::string key;
  long long kib = 0;
  while (in >> key) {
    if (key == "VmRSS:" && in >> kib) m.rss = kib * 1024;
    else if (key == "VmHWM:" && in >> kib) m.hwm = kib * 1024;
    else if (key == "RssAnon:" && in >> kib) m.anon = kib * 1024;
  }
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  std::string model, backend = "cpu", mode = "auto";
  bool touch = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--backend" && i + 1 < argc) backend = argv[++i];
    else if (arg == "--load-mode" && i + 1 < argc) mode = argv[++i];
    else if (arg == "--touch") touch = true;
    else if (model.empty() && arg[0] != '-') model = arg;
    else {
      std::cerr << "usage: llama_load MODEL.gguf [--backend cpu|vulkan] [--load-mode auto|none|mmap] [--touch]\n";
      return 2;
    }
  }
  if (model.empty() || (backend != "cpu" && backend != "vulkan")) {
    std::cerr << "usage: llama_load MODEL.gguf [--backend cpu|vulkan] [--load-mode auto|none|mmap]\n";
    return 2;
  }
  llama_log_set(
      [](ggml_log_level level, const char* text, void*) {
        if (level >= GGML_LOG_LEVEL_ERROR) std::cerr << text;
      },
      nullptr);
  const char* dir = std::getenv("GGML_BACKEND_DIR");
  ggml_backend_load_all_from_path(dir ? dir : LWLOAD_GGML_BACKEND_DIR);
  llama_backend_init();

  ggml_backend_dev_t devices[2] = {nullptr, nullptr};
  llama_model_params params = llama_model_default_params();
  if (backend == "vulkan") {
    for (std::size_t i = 0; i < ggml_backend_dev_count() && !devices[0]; ++i)
      if (std::strcmp(ggml_backend_reg_name(ggml_backend_dev_backend_reg(ggml_backend_dev_get(i))), "Vulkan") == 0)
        devices[0] = ggml_backend_dev_get(i);
    if (!devices[0]) {
      std::cerr << "llama_load: no ggml Vulkan device (GGML_VK_VISIBLE_DEVICES=0 lets ggml use lavapipe)\n";
      return 1;
    }
    params.devices = devices;
    params.n_gpu_layers = -1;  // every layer
  } else {
    params.devices = devices;  // none: the CPU
    params.n_gpu_layers = 0;
  }
  params.load_mode = mode == "none"   ? LLAMA_LOAD_MODE_NONE
                     : mode == "mmap" ? LLAMA_LOAD_MODE_MMAP
                                      : LLAMA_LOAD_MODE_AUTO;

  const Memory before = memory_now();
  std::ofstream("/proc/self/clear_refs") << "5";  // VmHWM from here
  const auto start = std::chrono::steady_clock::now();
  llama_model* loaded = llama_model_load_from_file(model.c_str(), params);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const Memory after = memory_now();
  if (!loaded) {
    std::cerr << "llama_load: llama_model_load_from_file failed for " << model << "\n";
    return 1;
  }
  double touch_seconds = 0;
  if (touch) {
    const auto touch_start = std::chrono::steady_clock::now();
    const int fd = ::open(model.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st {};
    if (fd < 0 || ::fstat(fd, &st) != 0) return 1;
    const auto size = static_cast<std::size_t>(st.st_size);
    auto* pages = static_cast<const volatile unsigned char*>(::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0));
    ::close(fd);
    if (pages == MAP_FAILED) return 1;
    const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    for (std::size_t at = 0; at < size; at += page) (void)pages[at];  // a volatile read: one fault per page
    ::munmap(const_cast<unsigned char*>(pages), size);
    touch_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - touch_start).count();
  }
  std::cout << "{\"loader\": \"llama.cpp\", \"backend\": \"" << backend << "\", \"load_mode\": \"" << mode
            << "\", \"peak_rss_growth\": " << (after.hwm - before.rss)
            << ", \"anon_growth\": " << (after.anon - before.anon) << ", \"load_seconds\": " << seconds;
  if (touch) std::cout << ", \"touch_seconds\": " << touch_seconds;
  std::cout << "}" << std::endl;
  llama_model_free(loaded);
  llama_backend_free();
  return 0;
}
