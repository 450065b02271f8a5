#include "support/verify_checks.hpp"

#include <atomic>
#include <exception>

#include "lwload/backend.hpp"
#include "lwload/plan.hpp"
#include "support/test_support.hpp"
#include "synth/synth.hpp"

namespace lwload::test {
namespace {

// Writes one byte of device memory at the tensor's byte `at`, through the device's upload path.
void put_device_byte(Device& device, const TensorHandle& h, std::uint64_t at, std::byte value) {
  auto staging = device.allocate_staging(4096);
  staging->bytes()[0] = value;
  std::atomic<bool> done{false};
  std::exception_ptr error;
  device.upload(*staging, 0, *h.buffer, h.offset + at, 1, [&](std::exception_ptr e) {
    error = e;
    done = true;
  });
  device.finish();
  REQUIRE(done.load());
  if (error) std::rethrow_exception(error);
}

std::byte device_byte(const Weights& w, const TensorHandle& h, std::uint64_t at) {
  std::byte b{};
  w.read_back(h, at, std::span(&b, 1));
  return b;
}

}  // namespace

void check_verify_finds_changed_byte(const std::string& device) {
  CAPTURE(device);
  TempDir dir;
  synth::SynthSpec spec;
  spec.total_bytes = 10 << 20;
  spec.tensor_count = 2;
  spec.alignment = 4096;
  synth::write_model(dir / "m.safetensors", spec);
  const Manifest m = open_manifest(dir / "m.safetensors");
  REQUIRE(m.tensors.size() == 2);
  REQUIRE(m.tensors[1].bytes > (4u << 20) + 777);

  std::size_t changed = 0;
  for (const Placement placement : {Placement::staged, Placement::direct}) {
    CAPTURE(placement_name(placement));
    const auto d = open_device(device);
    if (placement == Placement::direct && !d->info().caps.host_visible_alloc) continue;  // a discrete device
    LoadOptions options;
    options.plan.force = placement;
    const Weights w = load(m, *d, options);
    if (device == "null") {
      const Error e = error_of([&] { (void)verify(w); });
      CHECK(e.code() == ErrorCode::unsupported);
      CHECK(std::string(e.what()).find("not verifiable") != std::string::npos);
      return;
    }
    REQUIRE(verify(w).tensors == 2);
    REQUIRE(w.tensors().size() == 2);
    const TensorHandle& h = w.tensors()[1];
    if (h.placement == Placement::zero_copy) continue;  // the file's pages: nothing of the device's to change
    for (const std::uint64_t at : {std::uint64_t{0}, std::uint64_t{(4u << 20) + 777}, h.bytes - 1}) {
      CAPTURE(at);
      const std::byte original = device_byte(w, h, at);
      put_device_byte(*d, h, at, original ^ std::byte{0x5a});
      REQUIRE(device_byte(w, h, at) == (original ^ std::byte{0x5a}));
      const Error e = error_of([&] { (void)verify(w); });
      CHECK(e.code() == ErrorCode::device);
      const std::string what = e.what();
      CHECK(what.find(str("tensor '", h.info->name, "' differs from the file at byte ", at, " of ", h.bytes)) !=
            std::string::npos);
      put_device_byte(*d, h, at, original);
      CHECK(verify(w).tensors == 2);
      ++changed;
    }
  }
  CHECK(changed > 0);  // at least the staged load holds a device copy
}

void check_verify_finds_changed_decoded_byte(const std::string& device) {
  CAPTURE(device);
  OpenOptions densify;
  densify.densify = true;
  const Manifest m = open_manifest(testdata() / "tflite" / "face_detection_full_range_sparse.tflite", densify);
  const auto d = open_device(device);
  const Weights w = load(m, *d);
  REQUIRE(verify(w).tensors == m.tensors.size());
  const TensorHandle* h = nullptr;
  for (const TensorHandle& t : w.tensors())
    if (t.info->encoding != Encoding::raw && t.bytes > 16) h = &t;
  REQUIRE(h != nullptr);
  const std::uint64_t at = h->bytes / 2;
  const std::byte original = device_byte(w, *h, at);
  put_device_byte(*d, *h, at, original ^ std::byte{0x21});
  const Error e = error_of([&] { (void)verify(w); });
  CHECK(e.code() == ErrorCode::device);
  CHECK(std::string(e.what()).find(str("tensor '", h->info->name, "' differs from the file at byte ", at, " of ",
                                       h->bytes)) != std::string::npos);
  put_device_byte(*d, *h, at, original);
  CHECK(verify(w).tensors == m.tensors.size());
}

}  // namespace lwload::test
