// Synthetic models with deterministic contents, for tests, benchmarks and `lwload synth`.
// Contents are a pure function of (seed, tensor index, byte offset), so a loaded tensor can be
// checked against expected_bytes() without reading the file again.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

#include "lwload/dtype.hpp"

namespace lwload::synth {

struct SynthSpec {
  std::string format = "safetensors";  // "safetensors" or "gguf"
  std::uint64_t total_bytes = 1 << 20; // approximate data bytes (rounded to whole tensors)
  std::uint32_t tensor_count = 8;
  // Tensor data alignment. safetensors: 0 = packed (offsets as they fall: misaligned); N > 0 pads
  // the header so data starts N-aligned and rounds tensor sizes to N. gguf: general.alignment
  // (0 = the default 32).
  std::uint64_t alignment = 0;
  DType dtype = DType::F32;            // F32, F16, U8 or Q8_0 (gguf)
  std::uint64_t seed = 1;
};

// Writes the model (streaming: memory stays small whatever the size). Throws Error(io).
void write_model(const std::filesystem::path& path, const SynthSpec& spec);

// The deterministic bytes tensor `tensor_index` holds at [offset, offset + out.size()).
void expected_bytes(std::uint64_t seed, std::uint32_t tensor_index, std::uint64_t offset, std::span<std::byte> out);

// Tensor names are "t%05u" (t00000, t00001, ...).
std::string tensor_name(std::uint32_t tensor_index);

}  // namespace lwload::synth
