#include "support/truncation_checks.hpp"

#include <atomic>
#include <csignal>
#include <filesystem>

#include "lwload/backend.hpp"
#include "support/test_support.hpp"
#include "synth/synth.hpp"

namespace lwload::test {
namespace {

std::atomic<int> app_signals{0};
void app_handler(int) { app_signals.fetch_add(1); }

}  // namespace

void check_truncation_after_load(const std::string& device) {
  CAPTURE(device);
  TempDir dir;
  const auto path = dir / "cut.safetensors";
  synth::SynthSpec spec;
  spec.total_bytes = 4 << 20;
  spec.tensor_count = 4;
  spec.alignment = 4096;
  synth::write_model(path, spec);
  const Manifest manifest = open_manifest(path);
  const auto d = open_device(device);
  const Weights weights = load(manifest, *d);
  CHECK(verify(weights).tensors == 4);

  struct sigaction app {
  }, previous{};
  app.sa_handler = app_handler;
  ::sigaction(SIGBUS, &app, &previous);
  app_signals = 0;
  std::filesystem::resize_file(path, 4096);
  const Error changed = error_of([&] { (void)verify(weights); });
  CHECK(changed.code() == ErrorCode::io);
  CHECK(std::string(changed.what()).find(path.string()) != std::string::npos);
  std::size_t lost = 0;
  for (const TensorHandle& h : weights.tensors()) {
    std::vector<std::byte> bytes(h.bytes);
    if (h.placement != Placement::zero_copy) {
      CHECK_NOTHROW(weights.read_back(h, 0, bytes));  // in device memory: the file is not involved
      continue;
    }
    const Error e = error_of([&] { weights.read_back(h, 0, bytes); });
    CHECK(e.code() == ErrorCode::io);
    CHECK(std::string(e.what()).find("tensor '" + h.info->name + "'") != std::string::npos);
    CHECK(std::string(e.what()).find(path.string()) != std::string::npos);
    ++lost;
  }
  ::sigaction(SIGBUS, &previous, nullptr);
  CHECK(app_signals.load() == 0);
  MESSAGE(device, ": ", lost, " zero_copy tensors lost with the file, each an Error(io)");
}

}  // namespace lwload::test
