// begin_host_write's answer for the GPU backends' buffers: the whole allocation where the host
// can write it directly (a host-visible allocation, which the loader reads the file straight into),
// nothing for any other kind (the loader stages those).
#pragma once

#include "backends/layer.hpp"

#include <cstddef>
#include <cstdint>
#include <span>

namespace lwload {

inline std::span<std::byte> host_write_span(bool host_visible, void* host, std::uint64_t size) {
  if (!host_visible) return {};
  return {static_cast<std::byte*>(host), static_cast<std::size_t>(size)};
}

}  // namespace lwload
