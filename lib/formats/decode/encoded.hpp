// Decoding tensors whose bytes are not stored raw (TensorInfo::encoding != raw): the loader reads
// the encoded pieces into host memory and calls this to produce the tensor's stored bytes.
#pragma once

#include "formats/decode/layer.hpp"

#include <cstddef>
#include <filesystem>
#include <span>

#include "lwload/manifest.hpp"

namespace lwload::formats {

// `encoded` is the concatenation of tensor.pieces; `out` has tensor.bytes bytes. Throws
// Error(bad_input) naming `file` and the tensor when the encoding is malformed or the element
// count does not match the shape.
void decode_tensor(const TensorInfo& tensor, std::span<const std::byte> encoded, std::span<std::byte> out,
                   const std::filesystem::path& file);

// The encodings decode_tensor dispatches to (decode.cpp), with the same contract; `out` is checked
// to be tensor.bytes long before they are called.
void decode_onnx_fields(const TensorInfo& tensor, std::span<const std::byte> encoded, std::span<std::byte> out,
                        const std::filesystem::path& file);  // onnx_decode.cpp
void densify(const TensorInfo& tensor, std::span<const std::byte> encoded, std::span<std::byte> out,
             const std::filesystem::path& file);  // sparse_decode.cpp
void restride(const TensorInfo& tensor, std::span<const std::byte> encoded, std::span<std::byte> out,
              const std::filesystem::path& file);  // decode.cpp: Encoding::strided, row-major

}  // namespace lwload::formats
