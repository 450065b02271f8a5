// The FileMapping of bytes already in memory (ExecuTorch's FreeableBuffer: a span, and what
// releases it): in-memory files (MemoryFileSystem) own theirs through `owner`, borrowed memory
// (io::borrowed_memory) is the caller's and has none. Nothing to map and nothing to page in, so
// every byte is resident.
#pragma once

#include "io/layer.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <utility>

#include "lwload/file_system.hpp"

namespace lwload::io {

class MemoryMapping final : public FileMapping {
 public:
  // `owner` keeps `bytes` alive while the mapping lives; nullptr: borrowed, the caller keeps them.
  explicit MemoryMapping(std::span<const std::byte> bytes, std::shared_ptr<const void> owner = nullptr)
      : bytes_(bytes), owner_(std::move(owner)) {}
  std::span<const std::byte> bytes() const noexcept override { return bytes_; }
  void make_resident(std::uint64_t, std::uint64_t) const override {}
  std::uint64_t resident_bytes() const override { return bytes_.size(); }

 private:
  std::span<const std::byte> bytes_;
  std::shared_ptr<const void> owner_;
};

}  // namespace lwload::io
