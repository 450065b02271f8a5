// What the page-cache probes cost on one file, in one process (median of 11 calls each): lwload's
// io::count_cached, the 64 mincore windows of 4 MiB it used before Linux 6.5 until issue 43, and
// mincore over a whole populated mapping (the count the loader made after population). Run it
// plainly and under `build/tests/refuse cachestat --` to see both kernels' paths:
//   g++ -O2 -std=c++20 -Iinclude -Ilib -Ibuild -DLWLOAD_LAYER_TOOLS -DLWLOAD_LAYER_IO
//       -DLWLOAD_LAYER_CORE tools/bench/page_cache.cpp build/liblwload_io.a build/liblwload_core.a
//       -luring -pthread -o /tmp/bench-page-cache
//   /tmp/bench-page-cache MODEL
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>
#include "io/kernel_features.hpp"
#include "io/page_cache.hpp"
#include "lwload/file_system.hpp"
using namespace lwload;
static double median_ms(const std::function<void()>& f) {
  std::vector<double> t;
  for (int i = 0; i < 11; ++i) {
    auto a = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[5];
}
int main(int, char** argv) {
  auto file = posix_file_system()->open(argv[1]);
  const std::uint64_t size = file->size();
  std::printf("cachestat %s\n", io::cachestat().available ? "available" : "refused");
  std::uint64_t sink = 0;
  std::printf("count_cached (this change)            %8.3f ms\n",
              median_ms([&] { sink += io::count_cached(*file, 0, size).bytes; }));
  std::printf("64 x 4 MiB mincore windows (before)   %8.3f ms\n", median_ms([&] {
                const std::uint64_t w = 4 << 20, stride = (size - w) / 63;
                for (int i = 0; i < 64; ++i) sink += io::cached_bytes(*file, i * stride, w);
              }));
  auto mapping = file->map(0, size, MapAccess::resident);
  mapping->make_resident(0, size);
  std::printf("mincore every page, populated mapping %8.3f ms (the old resident count at ready)\n",
              median_ms([&] { sink += mapping->resident_bytes(); }));
  return sink == 1;
}
