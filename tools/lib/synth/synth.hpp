// Synthetic models with deterministic contents, for tests, benchmarks and `lwload synth`.
// Contents are a pure function of (seed, tensor index, byte offset), so a loaded tensor can be
// checked against expected_bytes() without reading the file again.
#pragma once

#include "tools/lib/layer.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "lwload/dtype.hpp"

namespace lwload::synth {

// The two layouts `lwload synth --layout` names; a layout only picks the default alignment.
//   packed:  what real writers produce. safetensors: tensors back to back right after a JSON header
//            padded to 8 bytes (the reference writer); GGUF: general.alignment 32 (llama.cpp's default).
//   aligned: every tensor starts on a page (4096) boundary, the layout zero-copy likes best.
enum class Layout { packed, aligned };

std::optional<Layout> layout_from_name(std::string_view name);  // "packed" / "aligned"
std::string_view layout_name(Layout layout);
// The SynthSpec::alignment that gives `layout` for `format` ("safetensors" or "gguf").
std::uint64_t layout_alignment(std::string_view format, Layout layout);

struct SynthSpec {
  std::string format = "safetensors";   // "safetensors" or "gguf"
  std::uint64_t total_bytes = 1 << 20;  // approximate data bytes (rounded to whole tensors)
  std::uint32_t tensor_count = 8;
  // Tensor data alignment. safetensors: 0 = packed (offsets as they fall: misaligned); N > 0 pads
  // the header so data starts N-aligned and rounds tensor sizes to N. gguf: general.alignment
  // (0 = the default 32).
  std::uint64_t alignment = 0;
  DType dtype = DType::F32;  // F32, F16, U8 or Q8_0 (gguf)
  std::uint64_t seed = 1;
};

// Writes the model (streaming: memory stays small whatever the size). Throws Error(io).
void write_model(const std::filesystem::path& path, const SynthSpec& spec);

// The deterministic bytes tensor `tensor_index` holds at [offset, offset + out.size()).
void expected_bytes(std::uint64_t seed, std::uint32_t tensor_index, std::uint64_t offset, std::span<std::byte> out);

// Tensor names are "t%05u" (t00000, t00001, ...).
std::string tensor_name(std::uint32_t tensor_index);

}  // namespace lwload::synth
