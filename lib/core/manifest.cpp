// Manifest queries that every consumer shares.
#include "lwload/manifest.hpp"

#include <algorithm>

namespace lwload {

std::string_view encoding_name(Encoding encoding) noexcept {
  switch (encoding) {
    case Encoding::raw: return "raw";
    case Encoding::onnx_varint: return "onnx_varint";
    case Encoding::onnx_fixed: return "onnx_fixed";
    case Encoding::sparse: return "sparse";
    case Encoding::strided: return "strided";
  }
  return "?";
}

std::uint64_t Manifest::total_bytes() const noexcept {
  std::uint64_t total = 0;
  for (const auto& t : tensors) total += t.bytes;
  return total;
}

std::uint64_t Manifest::largest_tensor_bytes() const noexcept {
  std::uint64_t largest = 0;
  for (const auto& t : tensors) largest = std::max(largest, t.bytes);
  return largest;
}

const TensorInfo* Manifest::find(std::string_view name) const noexcept {
  for (const auto& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

}  // namespace lwload
