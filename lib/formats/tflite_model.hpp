// Walks a TFLite or Circle flatbuffer (already mapped by tflite.cpp) and builds the Manifest:
// verification, buffers (inline, extended and external), tensors of every subgraph, quantization
// and model metadata. Only the flatbuffer's tables are touched, never tensor data.
#pragma once

#include <cstdint>
#include <span>

#include "formats/format.hpp"
#include "formats/tflite_dtype.hpp"

namespace lwload::formats {

struct TfliteInput {
  const ModelSource& source;
  std::uint64_t file_size;                   // of the model file: extended buffers lie below it
  std::span<const std::uint8_t> flatbuffer;  // the file's first min(size, < 2 GiB) bytes
};

// Throws Error(bad_input) naming the file, the tensor, the field and the value when the model is
// malformed, Error(unsupported) for valid tensors lwload cannot place (sparse sub-byte, compressed,
// RESOURCE/VARIANT, packed external buffers).
Manifest read_tflite_flatbuffer(const TfliteInput& input, TfliteFlavor flavor);

}  // namespace lwload::formats
