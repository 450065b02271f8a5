// Canonical element types: what a tensor's bytes are *stored* as, with the spellings the CLI, JSON
// and C API use (docs/ARCHITECTURE.md, "Manifest"). ggml block-quantized types are
// first-class dtypes, so byte sizes are computed from blocks, never from a per-element width.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include "lwload/export.h"

namespace lwload {

enum class DType : std::uint8_t {
  F64,
  F32,
  F16,
  BF16,
  F8_E4M3,
  F8_E5M2,
  I64,
  I32,
  I16,
  I8,
  I4,
  U64,
  U32,
  U16,
  U8,
  BOOL,
  C64,
  C128,
  STRING,
  // ggml block types (GGUF)
  Q4_0,
  Q4_1,
  Q5_0,
  Q5_1,
  Q8_0,
  Q8_1,
  Q2_K,
  Q3_K,
  Q4_K,
  Q5_K,
  Q6_K,
  Q8_K,
  IQ2_XXS,
  IQ2_XS,
  IQ3_XXS,
  IQ1_S,
  IQ4_NL,
  IQ3_S,
  IQ2_S,
  IQ4_XS,
  IQ1_M,
  TQ1_0,
  TQ2_0,
  MXFP4,
  NVFP4,
  Q1_0,
  Q2_0,
};

// Storage layout: block_elems elements occupy block_bytes bytes. Plain types have block_elems == 1;
// I4 packs two elements per byte (a trailing half byte rounds up); ggml types need whole blocks.
struct DTypeLayout {
  std::uint32_t block_elems;
  std::uint32_t block_bytes;
  bool partial_block_rounds_up;
};

LWLOAD_API std::string_view dtype_name(DType type) noexcept;
LWLOAD_API std::optional<DType> dtype_from_name(std::string_view name) noexcept;

// STRING has no fixed layout (variable-length payloads): nullopt.
LWLOAD_API std::optional<DTypeLayout> dtype_layout(DType type) noexcept;

// Bytes needed for `element_count` elements, or nullopt when the count is not a whole number of
// blocks or the size overflows 64 bits.
LWLOAD_API std::optional<std::uint64_t> dtype_bytes(DType type, std::uint64_t element_count) noexcept;

// Product of a shape's dimensions; nullopt for a negative dimension or on overflow.
LWLOAD_API std::optional<std::uint64_t> element_count(std::span<const std::int64_t> shape) noexcept;

// ggml's numeric type ids (ggml.h `enum ggml_type`, as written in GGUF tensor infos).
LWLOAD_API std::optional<DType> dtype_from_ggml(std::uint32_t ggml_type) noexcept;

}  // namespace lwload
