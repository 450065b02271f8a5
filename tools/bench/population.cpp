// How fast each way of making a warm file's pages resident in a mapping is, on this kernel: the
// measurement behind MmapMapping's choice of MAP_POPULATE where MADV_POPULATE_READ is refused.
//   g++ -O2 -std=c++20 tools/bench/population.cpp -o /tmp/bench-population && /tmp/bench-population FILE
// Maps the whole file each time (median of 5, min and max): MADV_POPULATE_READ; MAP_POPULATE;
// MAP_POPULATE then mincore over the range; MADV_WILLNEED then one read per page from user space
// (no guard: a lost page would raise SIGBUS); MADV_WILLNEED then one byte per page read by the
// kernel (process_vm_readv, 256 pages a call: lwload's guarded touch).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: bench-population FILE\n");
    return 2;
  }
  const int fd = ::open(argv[1], O_RDONLY);
  if (fd < 0) return 1;
  const auto n = static_cast<std::size_t>(::lseek(fd, 0, SEEK_END));
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const auto map = [&](int flags) { return ::mmap(nullptr, n, PROT_READ, MAP_SHARED | flags, fd, 0); };
  struct Way {
    const char* name;
    std::function<void()> run;
  };
  const std::vector<Way> ways = {
      {"MADV_POPULATE_READ",
       [&] {
         void* p = map(0);
         ::madvise(p, n, 22);
         ::munmap(p, n);
       }},
      {"MAP_POPULATE", [&] { ::munmap(map(MAP_POPULATE), n); }},
      {"MAP_POPULATE + mincore",
       [&] {
         void* p = map(MAP_POPULATE);
         std::vector<unsigned char> v(n / page + 1);
         ::mincore(p, n, v.data());
         ::munmap(p, n);
       }},
      {"WILLNEED + user touch/page",
       [&] {
         void* p = map(0);
         ::madvise(p, n, MADV_WILLNEED);
         volatile unsigned sum = 0;
         for (std::size_t o = 0; o < n; o += page) sum = sum + static_cast<volatile unsigned char*>(p)[o];
         ::munmap(p, n);
       }},
      {"WILLNEED + kernel touch/page",
       [&] {
         void* p = map(0);
         ::madvise(p, n, MADV_WILLNEED);
         char sink[256];
         iovec remote[256];
         for (std::size_t o = 0; o < n;) {
           std::size_t c = 0;
           for (; c < 256 && o < n; ++c, o += page) remote[c] = {static_cast<char*>(p) + o, 1};
           iovec local{sink, c};
           ::process_vm_readv(::getpid(), &local, 1, remote, c, 0);
         }
         ::munmap(p, n);
       }},
  };
  for (const Way& way : ways) {
    std::vector<double> ms;
    for (int i = 0; i < 5; ++i) {
      const auto start = std::chrono::steady_clock::now();
      way.run();
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    std::sort(ms.begin(), ms.end());
    std::printf("%-30s median %8.2f ms  (min %.2f, max %.2f)\n", way.name, ms[2], ms[0], ms[4]);
  }
}
