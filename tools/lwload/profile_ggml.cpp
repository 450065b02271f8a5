// ggml's own loading, profiled (see profile_ggml.hpp).
#include "profile_ggml.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <vector>

#include <ggml-alloc.h>
#include <ggml-backend.h>
#include <ggml.h>
#include <gguf.h>

#include "lwload/error.hpp"
#include "profile_baseline.hpp"

namespace lwload::cli {
namespace {

ggml_backend_dev_t ggml_device_for(const std::string& device) {
  const char* dir = std::getenv("GGML_BACKEND_DIR");
  ggml_backend_load_all_from_path(dir ? dir : LWLOAD_GGML_BACKEND_DIR);
  const bool vulkan = device.rfind("vulkan", 0) == 0;
  const std::size_t colon = device.find(':');
  std::size_t wanted = vulkan && colon != std::string::npos ? std::stoul(device.substr(colon + 1)) : 0;
  for (std::size_t i = 0; i < ggml_backend_dev_count(); ++i) {
    ggml_backend_dev_t dev = ggml_backend_dev_get(i);
    const std::string_view registry = ggml_backend_reg_name(ggml_backend_dev_backend_reg(dev));
    if (vulkan ? registry == "Vulkan" && wanted-- == 0 : ggml_backend_dev_type(dev) == GGML_BACKEND_DEVICE_TYPE_CPU)
      return dev;
  }
  fail(ErrorCode::usage, "profile --loader ggml: ggml has no ", vulkan ? device : "CPU", " device",
       vulkan ? " (GGML_VK_VISIBLE_DEVICES=0 lets ggml use a CPU-type Vulkan device such as lavapipe)" : "");
}

// What ggml's loading holds: released in reverse order of acquisition.
struct GgmlWeights {
  gguf_context* gguf = nullptr;
  ggml_context* context = nullptr;
  ggml_backend_buffer_t buffer = nullptr;
  int fd = -1;
  ~GgmlWeights() {
    if (fd >= 0) ::close(fd);
    if (buffer) ggml_backend_buffer_free(buffer);
    if (context) ggml_free(context);
    if (gguf) gguf_free(gguf);
  }
};

}  // namespace

bool ggml_loader_available() noexcept { return true; }

profile::Report profile_ggml(const std::string& path, const Manifest& manifest, const std::string& device,
                             std::chrono::microseconds period) {
  if (manifest.format != "gguf")
    fail(ErrorCode::unsupported, "profile --loader ggml: ggml reads GGUF files only; ", path, " is ", manifest.format);
  using profile::Clock;
  ggml_backend_dev_t dev = ggml_device_for(device);
  // Started as an application starts it, before loading (the baseline includes it).
  const std::unique_ptr<ggml_backend, void (*)(ggml_backend_t)> backend(ggml_backend_dev_init(dev, nullptr),
                                                                        ggml_backend_free);
  if (!backend) fail(ErrorCode::device, "profile --loader ggml: ggml could not start ", ggml_backend_dev_name(dev));

  return run_engine_load(
      baseline_report(
          manifest, std::string("ggml ") + ggml_backend_dev_name(dev) + " (" + ggml_backend_dev_description(dev) + ")",
          "ggml", "pread", period),
      period, [&](profile::Timeline& timeline) -> std::shared_ptr<void> {
        auto w = std::make_shared<GgmlWeights>();
        timeline.phase_begin("header", Clock::now());
        w->gguf = gguf_init_from_file(path.c_str(), {true, &w->context});
        if (!w->gguf) fail(ErrorCode::bad_input, path, ": gguf_init_from_file refused it");
        timeline.phase_end("header", Clock::now());
        timeline.phase_begin("allocate", Clock::now());
        w->buffer = ggml_backend_alloc_ctx_tensors_from_buft(w->context, ggml_backend_dev_buffer_type(dev));
        if (!w->buffer) fail(ErrorCode::out_of_memory, "profile --loader ggml: ggml could not allocate the weights");
        timeline.phase_end("allocate", Clock::now());
        timeline.phase_begin("upload", Clock::now());
        w->fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (w->fd < 0) fail(ErrorCode::io, path, ": cannot open");
        std::vector<char> bytes;
        const std::size_t data = gguf_get_data_offset(w->gguf);
        for (std::int64_t i = 0; i < gguf_get_n_tensors(w->gguf); ++i) {
          ggml_tensor* t = ggml_get_tensor(w->context, gguf_get_tensor_name(w->gguf, i));
          bytes.resize(ggml_nbytes(t));
          const off_t at = static_cast<off_t>(data + gguf_get_tensor_offset(w->gguf, i));
          for (std::size_t done = 0; done < bytes.size();) {
            const ssize_t got = ::pread(w->fd, bytes.data() + done, bytes.size() - done, at + static_cast<off_t>(done));
            if (got <= 0) fail(ErrorCode::io, path, ": short read of tensor '", ggml_get_name(t), "'");
            done += static_cast<std::size_t>(got);
          }
          ggml_backend_tensor_set(t, bytes.data(), 0, bytes.size());
        }
        ggml_backend_synchronize(backend.get());
        timeline.phase_end("upload", Clock::now());
        return w;
      });
}

}  // namespace lwload::cli
