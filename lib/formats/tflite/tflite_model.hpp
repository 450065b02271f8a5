// Walks a TFLite or Circle flatbuffer (already mapped by tflite.cpp) and builds the Manifest:
// verification, buffers (inline, extended and external), tensors of every subgraph, quantization
// and model metadata. Only the flatbuffer's tables are touched, never tensor data.
#pragma once

#include "formats/tflite/layer.hpp"

#include <cstdint>
#include <span>
#include <utility>

#include "formats/format.hpp"
#include "formats/tflite/tflite_dtype.hpp"

namespace lwload::formats {

struct TfliteInput {
  const ModelSource& source;
  std::uint64_t file_size;                   // of the model file: extended buffers lie below it
  std::span<const std::uint8_t> flatbuffer;  // the file's first min(size, < 2 GiB) bytes
  // Ranges of `flatbuffer` not read from the file (large Buffer.data payloads: zeros), sorted and
  // disjoint. A table inside one is refused (tflite_tables.cpp).
  std::span<const std::pair<std::uint64_t, std::uint64_t>> unread = {};
};

// Buffer.data payloads at least this large are not read to find the tables.
inline constexpr std::uint64_t kUnreadPayload = 4096;

// Fails (bad_input, naming the structure and the range) when a table, vector or string the reader
// uses reaches into `input.unread`. The flatbuffer must have passed the Verifier.
void check_tables_outside_payloads(const TfliteInput& input, TfliteFlavor flavor,
                                   std::uint64_t payload_threshold = kUnreadPayload);

// Throws Error(bad_input) naming the file, the tensor, the field and the value when the model is
// malformed, Error(unsupported) for valid tensors lwload cannot place (sparse sub-byte, compressed,
// RESOURCE/VARIANT, packed external buffers).
Manifest read_tflite_flatbuffer(const TfliteInput& input, TfliteFlavor flavor);

}  // namespace lwload::formats
