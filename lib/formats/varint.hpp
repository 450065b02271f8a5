// Protobuf base-128 varints, decoded from bytes already in memory. The one decoder behind
// HeaderReader::varint (file headers), ONNX format detection and ONNX typed-field decoding.
#pragma once

#include "formats/layer.hpp"

#include <cstddef>
#include <cstdint>
#include <span>

namespace lwload::formats {

struct Varint {
  enum class Status : std::uint8_t { ok, truncated, overflow, too_long };
  std::uint64_t value = 0;
  std::size_t length = 0;  // bytes consumed when ok
  Status status = Status::truncated;
};

// Decodes the varint at the start of `bytes` (reads at most 10 bytes).
constexpr Varint decode_varint(std::span<const std::byte> bytes) noexcept {
  Varint out;
  for (std::size_t i = 0; i < 10; ++i) {
    if (i >= bytes.size()) return out;  // truncated
    const auto byte = static_cast<std::uint8_t>(bytes[i]);
    if (i == 9 && byte > 1) {
      out.status = Varint::Status::overflow;
      return out;
    }
    out.value |= static_cast<std::uint64_t>(byte & 0x7f) << (7 * i);
    if ((byte & 0x80) == 0) {
      out.length = i + 1;
      out.status = Varint::Status::ok;
      return out;
    }
  }
  out.status = Varint::Status::too_long;
  return out;
}

}  // namespace lwload::formats
