// What an inference engine's first pass does to a lazily loaded model: `load --lazy` maps the
// weights and reports them ready at once; the first use then reads one byte of every page of every
// tensor (as llama.cpp's first evaluation does over its mmap). Prints the two times, which are the
// over-memory benchmark's figures (docs/BENCHMARKS.md, "Models larger than the machine").
//
//   lazy_touch MODEL [--device host]
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

#include "example_main.hpp"
#include "lwload/lwload.hpp"

int main(int argc, char** argv) {
  return example::run_main("lazy_touch", [&] {
    std::string model, device_spec = "host";
    example::for_each_argument(argc, argv, [&](const std::string& arg, auto value) {
      if (arg == "--device") device_spec = value();
      else model = arg;
    });
    if (model.empty()) lwload::fail(lwload::ErrorCode::usage, "usage: lazy_touch MODEL [--device host]");
    using Clock = std::chrono::steady_clock;
    const auto ms = [](Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); };

    const auto begin = Clock::now();
    lwload::Manifest manifest = lwload::open_manifest(model);
    auto device = lwload::open_device(device_spec);
    lwload::LoadOptions options;
    options.lazy = true;
    const lwload::Weights weights = lwload::load(std::move(manifest), *device, options);
    const auto ready = Clock::now();

    // One byte of every page of every host-addressable tensor, summed so the reads stay.
    std::uint64_t sum = 0, touched = 0;
    for (const lwload::TensorHandle& t : weights.tensors()) {
      if (t.native.type != lwload::NativeType::host_ptr || t.bytes == 0) continue;
      const volatile unsigned char* p = static_cast<const unsigned char*>(t.native.handle) + t.offset;
      for (std::uint64_t at = 0; at < t.bytes; at += 4096) sum += p[at];
      touched += t.bytes;
    }
    const auto done = Clock::now();
    std::printf(
        "ready %.1f ms (lazy, %llu of %llu zero_copy bytes resident); touched %llu bytes in %.1f ms (checksum %llu)\n",
        ms(ready - begin), static_cast<unsigned long long>(weights.stats().resident_bytes),
        static_cast<unsigned long long>(weights.stats().zero_copy_bytes), static_cast<unsigned long long>(touched),
        ms(done - ready), static_cast<unsigned long long>(sum));
    std::printf("plan: %s\n", weights.plan().host.verdict.c_str());
    return touched > 0 ? 0 : 1;
  });
}
