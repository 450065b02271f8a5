// What `lwload bench` compares lwload against: the naive loader the project replaces, and the two
// ceilings of plain file reading (buffered pread = the page-cache limit, O_DIRECT = the disk).
// All reads go through the FileSystem seam, like the loader's.
//
// Every one takes a `ready` callback and calls it the moment its data is ready (read, copied or
// resident), before it frees or unmaps anything: the bench stops its clock there, as it stops
// lwload's when load() returns (the Weights' munmap and frees come later, untimed). So every row
// is timed the same way: from the first open to the data ready, teardown excluded.
#pragma once

#include <cstdint>
#include <functional>

#include <memory>
#include <vector>

#include "lwload/backend.hpp"
#include "lwload/file_system.hpp"
#include "lwload/manifest.hpp"

namespace lwload::bench {

using Ready = std::function<void()>;

// Where the naive loader's buffers come from: plain malloc, or — as numpy does for arrays of 4 MiB
// and more — 2 MiB-aligned blocks advised MADV_HUGEPAGE (transparent huge pages: fewer page
// faults when the memory is first touched, which is most of a naive copy's cost).
enum class NaiveMemory { plain, huge_pages };

// Every model file read whole into memory: the first half of the naive loaders.
class WholeFiles {
 public:
  WholeFiles(const Manifest& manifest, FileSystem& fs, NaiveMemory memory = NaiveMemory::plain);
  // Copies tensor `t`'s bytes (its pieces, in order) to `dst`, which has t.bytes bytes.
  void copy_tensor(const TensorInfo& t, std::byte* dst) const;

 private:
  struct FreeDeleter {
    void operator()(std::byte* p) const noexcept;
  };
  std::vector<std::unique_ptr<std::byte, FreeDeleter>> bytes_;
  std::vector<std::uint64_t> sizes_;
};

// The naive loader's steps, for a profiler: each is reported as it begins. `ready` comes when every
// tensor has its copy and the file buffers are still held (the loader's peak).
enum class NaiveStep { read, copy, ready, released };

// Reads each model file whole into one new[] buffer, then copies every tensor into its own new[]
// allocation — what loaders built on `f.read()` + per-tensor tensors do. Everything is freed (and
// returned to the OS with malloc_trim) before it returns. Returns the tensor bytes copied.
// `lwload bench` times it; `lwload profile --loader naive` (and --compare naive) profiles it.
std::uint64_t naive_load(const Manifest& manifest, FileSystem& fs, const std::function<void(NaiveStep)>& on_step = {},
                         NaiveMemory memory = NaiveMemory::plain);

// The naive loader on a device (what a first Vulkan, OpenCL or CUDA loader does): the whole file
// read into memory, then per tensor a host buffer of its size filled by memcpy, a device-local
// allocation and an upload, waited for. Returns the bytes uploaded; frees everything. `memory`
// decides the file buffers' (the per-tensor host copies are the device's staging allocations).
std::uint64_t naive_device_load(const Manifest& manifest, FileSystem& fs, Device& device, NaiveMemory memory,
                                const Ready& ready);

// Sequential pread of every model file through one reused buffer of `buffer_bytes`.
// Returns the bytes read.
std::uint64_t pread_files(const Manifest& manifest, FileSystem& fs, std::uint64_t buffer_bytes,
                          const Ready& ready = {});

// Sequential pread of every model file into one new, never-touched allocation of the files' size:
// the floor for any loader that must own a copy (the direct placement), because the kernel must
// map and zero every destination page, which pread into a reused buffer never pays.
std::uint64_t pread_into_new_memory(const Manifest& manifest, FileSystem& fs, std::uint64_t chunk_bytes,
                                    const Ready& ready);

// The same with O_DIRECT and a page-aligned buffer: reads bypass (and do not fill) the page
// cache. Throws Error(unsupported) when the file system refuses O_DIRECT (tmpfs, some overlays).
std::uint64_t direct_read_files(const Manifest& manifest, FileSystem& fs, std::uint64_t buffer_bytes,
                                const Ready& ready);

// Maps every model file whole and makes all its pages resident with one MADV_POPULATE_READ per file
// (touching every page instead on kernels before 5.14, which answer EINVAL): the limit for a
// zero-copy load whose tensors are ready only once resident. Throws Error(unsupported) when the
// file system cannot map. Returns the bytes made resident.
std::uint64_t map_and_populate(const Manifest& manifest, FileSystem& fs, const Ready& ready);

// Returns freed heap memory to the OS, so the next variant starts from a true baseline.
void release_freed_memory() noexcept;

}  // namespace lwload::bench
