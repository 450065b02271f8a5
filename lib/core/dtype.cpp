// The dtype table: canonical names, storage layouts and ggml type ids in one place.
#include "lwload/dtype.hpp"

#include <array>
#include <limits>

namespace lwload {
namespace {

struct DTypeRow {
  DType type;
  std::string_view name;
  DTypeLayout layout;  // block_elems == 0 means "no fixed layout"
};

constexpr std::array kTable{
    DTypeRow{DType::F64, "F64", {1, 8, false}},
    DTypeRow{DType::F32, "F32", {1, 4, false}},
    DTypeRow{DType::F16, "F16", {1, 2, false}},
    DTypeRow{DType::BF16, "BF16", {1, 2, false}},
    DTypeRow{DType::F8_E4M3, "F8_E4M3", {1, 1, false}},
    DTypeRow{DType::F8_E5M2, "F8_E5M2", {1, 1, false}},
    DTypeRow{DType::I64, "I64", {1, 8, false}},
    DTypeRow{DType::I32, "I32", {1, 4, false}},
    DTypeRow{DType::I16, "I16", {1, 2, false}},
    DTypeRow{DType::I8, "I8", {1, 1, false}},
    DTypeRow{DType::I4, "I4", {2, 1, true}},
    DTypeRow{DType::U64, "U64", {1, 8, false}},
    DTypeRow{DType::U32, "U32", {1, 4, false}},
    DTypeRow{DType::U16, "U16", {1, 2, false}},
    DTypeRow{DType::U8, "U8", {1, 1, false}},
    DTypeRow{DType::BOOL, "BOOL", {1, 1, false}},
    DTypeRow{DType::C64, "C64", {1, 8, false}},
    DTypeRow{DType::C128, "C128", {1, 16, false}},
    DTypeRow{DType::STRING, "STRING", {0, 0, false}},
    // ggml block layouts: {QK_*, sizeof(block_*)} from ggml-common.h's static_asserts, each checked
    // against gguf-py's GGML_QUANT_SIZES too. They agree except Q8_1, where gguf-py still says
    // 4 + 4 + 32 = 40 (the old float d, s) while ggml's block_q8_1 is two halves + 32 = 36; ggml's
    // ggml_type_size() is what llama.cpp uses, so 36. (Q8_1/Q8_K are ggml's dot-product scratch
    // types and do not appear in real GGUF files.)
    DTypeRow{DType::Q4_0, "Q4_0", {32, 18, false}},
    DTypeRow{DType::Q4_1, "Q4_1", {32, 20, false}},
    DTypeRow{DType::Q5_0, "Q5_0", {32, 22, false}},
    DTypeRow{DType::Q5_1, "Q5_1", {32, 24, false}},
    DTypeRow{DType::Q8_0, "Q8_0", {32, 34, false}},
    DTypeRow{DType::Q8_1, "Q8_1", {32, 36, false}},
    DTypeRow{DType::Q2_K, "Q2_K", {256, 84, false}},
    DTypeRow{DType::Q3_K, "Q3_K", {256, 110, false}},
    DTypeRow{DType::Q4_K, "Q4_K", {256, 144, false}},
    DTypeRow{DType::Q5_K, "Q5_K", {256, 176, false}},
    DTypeRow{DType::Q6_K, "Q6_K", {256, 210, false}},
    DTypeRow{DType::Q8_K, "Q8_K", {256, 292, false}},
    DTypeRow{DType::IQ2_XXS, "IQ2_XXS", {256, 66, false}},
    DTypeRow{DType::IQ2_XS, "IQ2_XS", {256, 74, false}},
    DTypeRow{DType::IQ3_XXS, "IQ3_XXS", {256, 98, false}},
    DTypeRow{DType::IQ1_S, "IQ1_S", {256, 50, false}},
    DTypeRow{DType::IQ4_NL, "IQ4_NL", {32, 18, false}},
    DTypeRow{DType::IQ3_S, "IQ3_S", {256, 110, false}},
    DTypeRow{DType::IQ2_S, "IQ2_S", {256, 82, false}},
    DTypeRow{DType::IQ4_XS, "IQ4_XS", {256, 136, false}},
    DTypeRow{DType::IQ1_M, "IQ1_M", {256, 56, false}},
    DTypeRow{DType::TQ1_0, "TQ1_0", {256, 54, false}},
    DTypeRow{DType::TQ2_0, "TQ2_0", {256, 66, false}},
    DTypeRow{DType::MXFP4, "MXFP4", {32, 17, false}},
    DTypeRow{DType::NVFP4, "NVFP4", {64, 36, false}},  // four E4M3 scales + 32 bytes of E2M1 pairs
    DTypeRow{DType::Q1_0, "Q1_0", {128, 18, false}},
    DTypeRow{DType::Q2_0, "Q2_0", {64, 18, false}},
};

const DTypeRow* row_of(DType type) noexcept {
  for (const auto& row : kTable)
    if (row.type == type) return &row;
  return nullptr;
}

}  // namespace

std::string_view dtype_name(DType type) noexcept {
  const DTypeRow* row = row_of(type);
  return row ? row->name : "?";
}

std::optional<DType> dtype_from_name(std::string_view name) noexcept {
  for (const auto& row : kTable)
    if (row.name == name) return row.type;
  return std::nullopt;
}

std::optional<DTypeLayout> dtype_layout(DType type) noexcept {
  const DTypeRow* row = row_of(type);
  if (!row || row->layout.block_elems == 0) return std::nullopt;
  return row->layout;
}

std::optional<std::uint64_t> dtype_bytes(DType type, std::uint64_t element_count) noexcept {
  const auto layout = dtype_layout(type);
  if (!layout) return std::nullopt;
  std::uint64_t blocks = element_count / layout->block_elems;
  if (element_count % layout->block_elems != 0) {
    if (!layout->partial_block_rounds_up) return std::nullopt;
    ++blocks;
  }
  if (blocks > std::numeric_limits<std::uint64_t>::max() / layout->block_bytes) return std::nullopt;
  return blocks * layout->block_bytes;
}

std::optional<std::uint64_t> element_count(std::span<const std::int64_t> shape) noexcept {
  std::uint64_t count = 1;
  for (std::int64_t dim : shape) {
    if (dim < 0) return std::nullopt;
    const auto d = static_cast<std::uint64_t>(dim);
    if (d != 0 && count > std::numeric_limits<std::uint64_t>::max() / d) return std::nullopt;
    count *= d;
  }
  return count;
}

std::optional<DType> dtype_from_ggml(std::uint32_t ggml_type) noexcept {
  // Index = ggml type id (ggml.h `enum ggml_type`, GGML_TYPE_COUNT = 43 as of Q2_0, the linked
  // ggml's); ids 4, 5 (Q4_2, Q4_3), 31-33 (Q4_0_4_4/4_8/8_8) and 36-38 (IQ4_NL_4_4/4_8/8_8) were
  // retired from GGUF.
  constexpr std::array<std::optional<DType>, 43> kGgml{
      DType::F32,   DType::F16,   DType::Q4_0,    DType::Q4_1,   std::nullopt,   std::nullopt, DType::Q5_0,
      DType::Q5_1,  DType::Q8_0,  DType::Q8_1,    DType::Q2_K,   DType::Q3_K,    DType::Q4_K,  DType::Q5_K,
      DType::Q6_K,  DType::Q8_K,  DType::IQ2_XXS, DType::IQ2_XS, DType::IQ3_XXS, DType::IQ1_S, DType::IQ4_NL,
      DType::IQ3_S, DType::IQ2_S, DType::IQ4_XS,  DType::I8,     DType::I16,     DType::I32,   DType::I64,
      DType::F64,   DType::IQ1_M, DType::BF16,    std::nullopt,  std::nullopt,   std::nullopt, DType::TQ1_0,
      DType::TQ2_0, std::nullopt, std::nullopt,   std::nullopt,  DType::MXFP4,   DType::NVFP4, DType::Q1_0,
      DType::Q2_0,
  };
  if (ggml_type >= kGgml.size()) return std::nullopt;
  return kGgml[ggml_type];
}

}  // namespace lwload
