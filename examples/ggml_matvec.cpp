// The smallest real ggml application: multiplies every 2-D weight of a model by a fixed vector in a
// ggml graph (ggml_mul_mat, computed by the chosen backend), and prints one line per weight,
// "NAME SHA256-of-the-output-bytes", then one JSON line with the load's memory and time.
//
//   ggml_matvec MODEL [--backend cpu|vulkan] [--loader lwload|ggml] [--json] [--load-only]
//
// --loader lwload: lwload::ggml::load — the weights are the file's pages where the device imports
//   host memory, else the device's own buffers filled by lwload (lwload/ggml.hpp).
// --loader ggml: what ggml applications do today (GGUF only): gguf_init_from_file(no_alloc),
//   ggml_backend_alloc_ctx_tensors_from_buft on the device's buffer type, then per tensor a read
//   of its bytes from the file and ggml_backend_tensor_set.
// The two must print the same digests. --json prints only the JSON line; --load-only computes
// nothing (scripts/bench/ggml.sh measures the loads alone). The ggml backends are
// loaded from $GGML_BACKEND_DIR, else from the folder this build found ggml in.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <ggml-alloc.h>
#include <ggml-backend.h>
#include <ggml.h>
#include <gguf.h>

#include "example_main.hpp"
#include "lwload/ggml.hpp"
#include "lwload/lwload.hpp"
#include "sha256.hpp"

namespace {

struct Memory {
  std::int64_t rss = 0, hwm = 0, anon = 0;  // bytes (/proc/self/status VmRSS, VmHWM, RssAnon)
};
Memory memory_now() {
  Memory m;
  std::ifstream in("/proc/self/status");
  std::string key;
  std::int64_t kib = 0;
  while (in >> key) {
    if (key == "VmRSS:" && in >> kib) m.rss = kib * 1024;
    else if (key == "VmHWM:" && in >> kib) m.hwm = kib * 1024;
    else if (key == "RssAnon:" && in >> kib) m.anon = kib * 1024;
  }
  return m;
}
// Resets VmHWM to the current RSS, so the peak measured is the load's.
void reset_peak() { std::ofstream("/proc/self/clear_refs") << "5"; }

ggml_backend_dev_t pick_device(const std::string& backend) {
  for (std::size_t i = 0; i < ggml_backend_dev_count(); ++i) {
    ggml_backend_dev_t dev = ggml_backend_dev_get(i);
    const std::string reg = ggml_backend_reg_name(ggml_backend_dev_backend_reg(dev));
    if ((backend == "cpu" && ggml_backend_dev_type(dev) == GGML_BACKEND_DEVICE_TYPE_CPU) ||
        (backend == "vulkan" && reg == "Vulkan"))
      return dev;
  }
  lwload::fail(lwload::ErrorCode::usage, "no ggml ", backend,
               " device (GGML_VK_VISIBLE_DEVICES=0 lets ggml use lavapipe)");
}

// ggml's own loading, as ggml applications write it.
struct GgmlLoaded {
  ggml_context* context = nullptr;
  gguf_context* gguf = nullptr;
  ggml_backend_buffer_t buffer = nullptr;
  std::vector<ggml_tensor*> tensors;
  ~GgmlLoaded() {
    if (buffer) ggml_backend_buffer_free(buffer);
    if (context) ggml_free(context);
    if (gguf) gguf_free(gguf);
  }
};
std::unique_ptr<GgmlLoaded> load_with_ggml(const std::string& path, ggml_backend_dev_t dev) {
  auto loaded = std::make_unique<GgmlLoaded>();
  gguf_init_params params{true, &loaded->context};
  loaded->gguf = gguf_init_from_file(path.c_str(), params);
  if (!loaded->gguf) lwload::fail(lwload::ErrorCode::bad_input, path, ": gguf_init_from_file refused it");
  loaded->buffer = ggml_backend_alloc_ctx_tensors_from_buft(loaded->context, ggml_backend_dev_buffer_type(dev));
  if (!loaded->buffer) lwload::fail(lwload::ErrorCode::out_of_memory, "ggml could not allocate the weights");
  ggml_backend_buffer_set_usage(loaded->buffer, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) lwload::fail(lwload::ErrorCode::io, path, ": cannot open");
  std::vector<char> bytes;
  const std::size_t data = gguf_get_data_offset(loaded->gguf);
  for (std::int64_t i = 0; i < gguf_get_n_tensors(loaded->gguf); ++i) {
    ggml_tensor* t = ggml_get_tensor(loaded->context, gguf_get_tensor_name(loaded->gguf, i));
    bytes.resize(ggml_nbytes(t));
    const off_t at = static_cast<off_t>(data + gguf_get_tensor_offset(loaded->gguf, i));
    for (std::size_t done = 0; done < bytes.size();) {
      const ssize_t got = ::pread(fd, bytes.data() + done, bytes.size() - done, at + static_cast<off_t>(done));
      if (got <= 0) {
        ::close(fd);
        lwload::fail(lwload::ErrorCode::io, path, ": short read of ", ggml_get_name(t));
      }
      done += static_cast<std::size_t>(got);
    }
    ggml_backend_tensor_set(t, bytes.data(), 0, bytes.size());
    loaded->tensors.push_back(t);
  }
  ::close(fd);
  return loaded;
}

bool multipliable(const ggml_tensor* w) {
  return ggml_n_dims(w) == 2 && (ggml_is_quantized(w->type) || w->type == GGML_TYPE_F32 || w->type == GGML_TYPE_F16 ||
                                 w->type == GGML_TYPE_BF16);
}

// y = w · x for a fixed x of w->ne[0] elements, computed on `backend`; the bytes of y.
std::vector<std::byte> matvec(ggml_backend_t backend, ggml_tensor* w) {
  const ggml_init_params params{ggml_tensor_overhead() * 8 + ggml_graph_overhead(), nullptr, true};
  ggml_context* ctx = ggml_init(params);
  ggml_tensor* x = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, w->ne[0]);
  ggml_set_input(x);
  ggml_tensor* y = ggml_mul_mat(ctx, w, x);
  ggml_set_output(y);
  ggml_cgraph* graph = ggml_new_graph(ctx);
  ggml_build_forward_expand(graph, y);
  ggml_gallocr_t allocr = ggml_gallocr_new(ggml_backend_get_default_buffer_type(backend));
  if (!ggml_gallocr_alloc_graph(allocr, graph))
    lwload::fail(lwload::ErrorCode::out_of_memory, "ggml: graph allocation failed");
  std::vector<float> xs(static_cast<std::size_t>(w->ne[0]));
  for (std::size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>(static_cast<int>(i % 17) - 8) / 8.0f;
  ggml_backend_tensor_set(x, xs.data(), 0, ggml_nbytes(x));
  if (ggml_backend_graph_compute(backend, graph) != GGML_STATUS_SUCCESS)
    lwload::fail(lwload::ErrorCode::device, "ggml: computing ", ggml_get_name(w), " failed");
  std::vector<std::byte> out(ggml_nbytes(y));
  ggml_backend_tensor_get(y, out.data(), 0, out.size());
  ggml_gallocr_free(allocr);
  ggml_free(ctx);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  return example::run_main("ggml_matvec", [&] {
    std::string model, backend_name = "cpu", loader = "lwload";
    bool json_only = false, load_only = false;
    example::for_each_argument(argc, argv, [&](const std::string& arg, auto value) {
      if (arg == "--backend") backend_name = value();
      else if (arg == "--loader") loader = value();
      else if (arg == "--json") json_only = true;
      else if (arg == "--load-only") load_only = true;
      else if (!arg.empty() && arg[0] != '-' && model.empty()) model = arg;
      else
        lwload::fail(lwload::ErrorCode::usage, "unknown argument ", arg,
                     "\nusage: ggml_matvec MODEL [--backend cpu|vulkan] [--loader lwload|ggml] [--json] [--load-only]");
    });
    if (model.empty())
      lwload::fail(lwload::ErrorCode::usage,
                   "usage: ggml_matvec MODEL [--backend cpu|vulkan] [--loader lwload|ggml] [--json] [--load-only]");
    if (backend_name != "cpu" && backend_name != "vulkan")
      lwload::fail(lwload::ErrorCode::usage, "--backend is cpu or vulkan");
    if (loader != "lwload" && loader != "ggml") lwload::fail(lwload::ErrorCode::usage, "--loader is lwload or ggml");

    const char* dir = std::getenv("GGML_BACKEND_DIR");
    ggml_backend_load_all_from_path(dir ? dir : LWLOAD_GGML_BACKEND_DIR);
    ggml_backend_dev_t dev = pick_device(backend_name);
    ggml_backend_t backend = ggml_backend_dev_init(dev, nullptr);
    if (!backend) lwload::fail(lwload::ErrorCode::device, "ggml could not start ", ggml_backend_dev_name(dev));

    // The load, measured from here: memory over what the process held with the backend started.
    const Memory before = memory_now();
    reset_peak();
    const auto start = std::chrono::steady_clock::now();
    std::unique_ptr<lwload::ggml::Model> lw;
    std::unique_ptr<GgmlLoaded> gg;
    std::vector<ggml_tensor*> weights;
    if (loader == "lwload") {
      lw = std::make_unique<lwload::ggml::Model>(lwload::ggml::load(lwload::open_manifest(model), dev));
      for (ggml_tensor* t : lw->tensors())
        if (t) weights.push_back(t);
    } else {
      gg = load_with_ggml(model, dev);
      weights = gg->tensors;
    }
    const double load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const Memory after = memory_now();

    std::size_t computed = 0;
    for (ggml_tensor* w : weights) {
      if (load_only || !multipliable(w)) continue;
      const std::vector<std::byte> y = matvec(backend, w);
      if (!json_only) std::cout << ggml_get_name(w) << ' ' << example::sha256_hex(y) << '\n';
      ++computed;
    }
    std::cout << "{\"loader\": \"" << loader << "\", \"backend\": \"" << backend_name << "\", \"tensors\": " << computed
              << ", \"peak_rss_growth\": " << (after.hwm - before.rss)
              << ", \"anon_growth\": " << (after.anon - before.anon) << ", \"load_seconds\": " << load_seconds
              << ", \"zero_copy_bytes\": " << (lw ? lw->weights().stats().zero_copy_bytes : 0) << "}" << std::endl;
    lw.reset();
    gg.reset();
    ggml_backend_free(backend);
    return 0;
  });
}
