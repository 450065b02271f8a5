// Page-aligned anonymous memory for the host backend's allocations and staging slots: mmap'd, so
// untouched pages cost nothing and freeing returns them to the OS at once.
#pragma once

#include "backends/host/layer.hpp"

#include <cstddef>
#include <cstdint>
#include <span>

namespace lwload::host {

class AnonymousMemory {
 public:
  AnonymousMemory() = default;
  // Throws Error(out_of_memory) naming the size when mmap refuses.
  explicit AnonymousMemory(std::uint64_t bytes);
  ~AnonymousMemory();
  AnonymousMemory(AnonymousMemory&& other) noexcept;
  AnonymousMemory& operator=(AnonymousMemory&& other) noexcept;

  std::span<std::byte> bytes() const noexcept { return {data_, size_}; }
  // Makes every page resident and writable now, ahead of a bulk write into it.
  void prefault() const noexcept;
  // The same for the pages under `range` (a part of bytes()); its contents are left as they are.
  static void prefault(std::span<std::byte> range) noexcept;

 private:
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace lwload::host
