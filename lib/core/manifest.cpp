// Manifest queries that every consumer shares.
#include "lwload/manifest.hpp"

#include <algorithm>
#include <cstring>

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

std::size_t PackedArray::element_size(Type type) noexcept {
  switch (type) {
    case Type::u8:
    case Type::i8:
    case Type::boolean: return 1;
    case Type::u16:
    case Type::i16: return 2;
    case Type::u32:
    case Type::i32:
    case Type::f32: return 4;
    case Type::u64:
    case Type::i64:
    case Type::f64: return 8;
  }
  return 1;
}

namespace {
template <typename T>
T element(const std::vector<std::byte>& bytes, std::size_t i) noexcept {
  T value;
  std::memcpy(&value, bytes.data() + i * sizeof(T), sizeof(T));  // hosts are little-endian, as files
  return value;
}
}  // namespace

MetaValue PackedArray::operator[](std::size_t i) const {
  switch (type) {
    case Type::u8: return {std::uint64_t{element<std::uint8_t>(bytes, i)}};
    case Type::i8: return {std::int64_t{element<std::int8_t>(bytes, i)}};
    case Type::u16: return {std::uint64_t{element<std::uint16_t>(bytes, i)}};
    case Type::i16: return {std::int64_t{element<std::int16_t>(bytes, i)}};
    case Type::u32: return {std::uint64_t{element<std::uint32_t>(bytes, i)}};
    case Type::i32: return {std::int64_t{element<std::int32_t>(bytes, i)}};
    case Type::u64: return {element<std::uint64_t>(bytes, i)};
    case Type::i64: return {element<std::int64_t>(bytes, i)};
    case Type::f32: return {double{element<float>(bytes, i)}};
    case Type::f64: return {element<double>(bytes, i)};
    case Type::boolean: return {element<std::uint8_t>(bytes, i) != 0};
  }
  return {};
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
