// An in-memory FileSystem: models held in RAM (fuzzing, tests, apps that embed weights), and the
// fault-injection point for tests — a file can be told to fail reads at or past an offset.
#pragma once

// Layer io's public header: refused below io in lwload's build (docs/ARCHITECTURE.md, "Layers").
#if defined(LWLOAD_LAYER_CORE) && !defined(LWLOAD_LAYER_IO)
#error \
    "lwload layering: include/lwload/memory_file_system.hpp (layer io) is not below this layer (the layer table in meson.build says what each layer may include)"
#endif

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <memory>
#include <vector>

#include "lwload/file_system.hpp"
#include "lwload/export.h"

namespace lwload {

class LWLOAD_API MemoryFileSystem final : public FileSystem {
 public:
  void add_file(const std::filesystem::path& path, std::vector<std::byte> bytes);
  void add_directory(const std::filesystem::path& path);
  // Reads touching bytes at or past `offset` of `path` throw Error(io): a failing disk, so files
  // already open fail too.
  void fail_reads_from(const std::filesystem::path& path, std::uint64_t offset);

  std::unique_ptr<RandomAccessFile> open(const std::filesystem::path& path, FileOpenFlags flags = {}) override;
  bool is_directory(const std::filesystem::path& path) override;
  std::vector<std::filesystem::path> list(const std::filesystem::path& dir) override;
  bool exists(const std::filesystem::path& path) override;

 private:
  struct Entry {
    std::shared_ptr<const std::vector<std::byte>> bytes;
    // Shared with the files opened from it; UINT64_MAX: reads never fail.
    std::shared_ptr<std::atomic<std::uint64_t>> fail_from;
  };
  std::mutex mutex_;
  std::map<std::filesystem::path, Entry> files_;
  std::vector<std::filesystem::path> directories_;
};

}  // namespace lwload
