// The reference loaders `lwload bench` measures lwload against (see bench_baselines.hpp).
#include "bench_baselines.hpp"

#include <malloc.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <vector>

#include "lwload/error.hpp"

namespace lwload::bench {
namespace {

// Keeps the copies observable so the compiler cannot drop them as dead stores.
volatile std::uint8_t g_sink = 0;

struct FreeDeleter {
  void operator()(void* p) const noexcept { std::free(p); }
};
using AlignedBuffer = std::unique_ptr<std::byte, FreeDeleter>;

AlignedBuffer aligned_buffer(std::uint64_t bytes, std::uint64_t alignment) {
  const std::uint64_t size = (bytes + alignment - 1) / alignment * alignment;
  void* p = std::aligned_alloc(alignment, size);
  if (!p) fail(ErrorCode::out_of_memory, "bench: cannot allocate a ", size, "-byte read buffer");
  return AlignedBuffer(static_cast<std::byte*>(p));
}

std::uint64_t read_sequentially(const RandomAccessFile& file, std::span<std::byte> buffer) {
  std::uint64_t offset = 0;
  for (;;) {
    const std::size_t got = file.read_at(offset, buffer);
    if (got == 0) return offset;
    offset += got;
    // O_DIRECT: a short read means the end of the file; the next offset would be unaligned.
    if (got < buffer.size()) return offset;
  }
}

// numpy's rule (numpy/core/src/multiarray/alloc.c): arrays of 4 MiB and more are advised
// MADV_HUGEPAGE; 2 MiB alignment lets every page of the block be a huge page.
constexpr std::uint64_t kHugePage = std::uint64_t{2} << 20;
constexpr std::uint64_t kHugeThreshold = std::uint64_t{4} << 20;

// A malloc'ed block of `bytes` (freed with std::free), or nullptr.
std::byte* naive_block(std::uint64_t bytes, NaiveMemory memory) {
  if (memory == NaiveMemory::plain || bytes < kHugeThreshold)
    return static_cast<std::byte*>(std::malloc(std::max<std::uint64_t>(bytes, 1)));
  const std::uint64_t size = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  void* p = std::aligned_alloc(kHugePage, size);
  if (p) ::madvise(p, size, MADV_HUGEPAGE);  // advice: a kernel without THP ignores it
  return static_cast<std::byte*>(p);
}

}  // namespace

void WholeFiles::FreeDeleter::operator()(std::byte* p) const noexcept { std::free(p); }

WholeFiles::WholeFiles(const Manifest& manifest, FileSystem& fs, NaiveMemory memory) {
  for (const auto& path : manifest.files) {
    const auto file = fs.open(path);
    const std::uint64_t size = file->size();
    if (size > std::numeric_limits<std::size_t>::max())
      fail(ErrorCode::out_of_memory, "bench naive: ", path.string(), " (", size, " bytes) exceeds the address space");
    std::unique_ptr<std::byte, FreeDeleter> whole(naive_block(size, memory));
    if (!whole) fail(ErrorCode::out_of_memory, "bench naive: cannot allocate ", size, " bytes for ", path.string());
    file->read_exact(0, {whole.get(), static_cast<std::size_t>(size)}, "whole file");  // allocated: fits
    bytes_.push_back(std::move(whole));
    sizes_.push_back(size);
  }
}

void WholeFiles::copy_tensor(const TensorInfo& t, std::byte* dst) const {
  std::uint64_t at = 0;
  for (const auto& piece : t.pieces) {
    // The readers checked every piece against its file; check again before copying.
    if (piece.file >= sizes_.size() || piece.offset > sizes_[piece.file] ||
        piece.length > sizes_[piece.file] - piece.offset || piece.length > t.bytes - at)
      fail(ErrorCode::bad_input, "bench naive: tensor '", t.name, "' piece at offset ", piece.offset,
           " lies outside its file");
    std::memcpy(dst + at, bytes_[piece.file].get() + piece.offset, piece.length);
    at += piece.length;
  }
}

std::uint64_t naive_load(const Manifest& manifest, FileSystem& fs, const std::function<void(NaiveStep)>& on_step,
                         NaiveMemory memory) {
  const auto step = [&](NaiveStep s) {
    if (on_step) on_step(s);
  };
  step(NaiveStep::read);
  std::vector<std::unique_ptr<std::byte, FreeDeleter>> tensors;
  tensors.reserve(manifest.tensors.size());
  std::uint64_t copied = 0;
  std::uint8_t sum = 0;
  {
    const WholeFiles files(manifest, fs, memory);
    step(NaiveStep::copy);
    for (const auto& t : manifest.tensors) {
      if (t.encoding != Encoding::raw) continue;  // decoded at load time; not part of this baseline
      std::unique_ptr<std::byte, FreeDeleter> copy(naive_block(t.bytes, memory));
      if (!copy)
        fail(ErrorCode::out_of_memory, "bench naive: cannot allocate ", t.bytes, " bytes for tensor '", t.name, "'");
      files.copy_tensor(t, copy.get());
      if (t.bytes > 0) sum = static_cast<std::uint8_t>(sum + std::to_integer<std::uint8_t>(copy.get()[t.bytes - 1]));
      copied += t.bytes;
      tensors.push_back(std::move(copy));
    }
    g_sink = sum;
    step(NaiveStep::ready);  // every copy made, the file buffers still held: the naive peak
  }
  tensors.clear();
  release_freed_memory();
  step(NaiveStep::released);
  return copied;
}

std::uint64_t naive_device_load(const Manifest& manifest, FileSystem& fs, Device& device, NaiveMemory memory,
                                const Ready& ready) {
  std::vector<std::unique_ptr<DeviceBuffer>> buffers;
  std::uint64_t copied = 0;
  {
    const WholeFiles files(manifest, fs, memory);
    for (const auto& t : manifest.tensors) {
      if (t.encoding != Encoding::raw || t.bytes == 0) continue;
      auto staging = device.allocate_staging(t.bytes);  // one host copy the size of the tensor
      files.copy_tensor(t, staging->bytes().data());
      buffers.push_back(device.allocate(t.bytes, MemoryPlace::device_local));
      std::exception_ptr error;
      device.upload(*staging, 0, *buffers.back(), 0, t.bytes, [&error](std::exception_ptr e) { error = e; });
      device.finish();
      if (error) std::rethrow_exception(error);
      copied += t.bytes;
    }
    if (ready) ready();
  }
  buffers.clear();
  release_freed_memory();
  return copied;
}

std::uint64_t pread_files(const Manifest& manifest, FileSystem& fs, std::uint64_t buffer_bytes, const Ready& ready) {
  const AlignedBuffer buffer = aligned_buffer(buffer_bytes, 4096);
  std::uint64_t total = 0;
  for (const auto& path : manifest.files)
    total += read_sequentially(*fs.open(path), {buffer.get(), static_cast<std::size_t>(buffer_bytes)});
  if (ready) ready();
  return total;
}

std::uint64_t pread_into_new_memory(const Manifest& manifest, FileSystem& fs, std::uint64_t chunk_bytes,
                                    const Ready& ready) {
  std::vector<std::unique_ptr<RandomAccessFile>> files;
  std::uint64_t total = 0;
  for (const auto& path : manifest.files) {
    files.push_back(fs.open(path));
    total += files.back()->size();
  }
  if (total == 0) return 0;
  void* p = ::mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) fail(ErrorCode::out_of_memory, "bench: cannot map ", total, " bytes of new memory");
  auto* dst = static_cast<std::byte*>(p);
  std::uint64_t at = 0;
  for (const auto& file : files) {
    const std::uint64_t size = file->size();
    for (std::uint64_t done = 0; done < size;) {
      const std::uint64_t n = std::min(chunk_bytes, size - done);
      const std::size_t got = file->read_at(done, {dst + at + done, static_cast<std::size_t>(n)});
      if (got == 0) break;
      done += got;
    }
    at += size;
  }
  g_sink = std::to_integer<std::uint8_t>(dst[total - 1]);
  if (ready) ready();
  ::munmap(p, total);
  return at;
}

std::uint64_t direct_read_files(const Manifest& manifest, FileSystem& fs, std::uint64_t buffer_bytes,
                                const Ready& ready) {
  buffer_bytes = std::max<std::uint64_t>(buffer_bytes / 4096 * 4096, 4096);
  const AlignedBuffer buffer = aligned_buffer(buffer_bytes, 4096);
  std::uint64_t total = 0;
  for (const auto& path : manifest.files) {
    std::unique_ptr<RandomAccessFile> file;
    try {
      file = fs.open(path, FileOpenFlags{.direct_io = true});
      total += read_sequentially(*file, {buffer.get(), static_cast<std::size_t>(buffer_bytes)});
    } catch (const Error& e) {
      fail(ErrorCode::unsupported, "O_DIRECT read refused: ", e.what());
    }
  }
  if (ready) ready();
  return total;
}

void release_freed_memory() noexcept { ::malloc_trim(0); }

}  // namespace lwload::bench
