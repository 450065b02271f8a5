// formats::decode_tensor: one entry for every encoding a reader may give a tensor, and the strided
// copy (Encoding::strided: a saved transpose made row-major).
#include <cstring>
#include <vector>

#include "formats/decode/encoded.hpp"
#include "lwload/error.hpp"

namespace lwload::formats {

void restride(const TensorInfo& tensor, std::span<const std::byte> encoded, std::span<std::byte> out,
              const std::filesystem::path& file) {
  const auto layout = dtype_layout(tensor.dtype);
  const std::size_t rank = tensor.shape.size();
  if (!tensor.strides || tensor.strides->size() != rank || !layout || layout->block_elems != 1)
    fail(ErrorCode::usage, file.string(), ": tensor '", tensor.name, "': strided without one stride per dimension");
  const std::size_t elem = static_cast<std::size_t>(layout->block_bytes);
  if (out.empty()) return;
  const auto& strides = *tensor.strides;
  // The span the reader promised holds every element: check it once, then copy without checks.
  std::uint64_t last = 0;
  for (std::size_t d = 0; d < rank; ++d)
    last += static_cast<std::uint64_t>(tensor.shape[d] - 1) * static_cast<std::uint64_t>(strides[d]);
  if (last >= encoded.size() / elem)
    fail(ErrorCode::bad_input, file.string(), ": tensor '", tensor.name, "': its strides reach element ", last,
         " but its bytes hold ", encoded.size() / elem);
  // Row-major walk of the output; the innermost dimension is one run.
  const std::uint64_t inner = rank == 0 ? 1 : static_cast<std::uint64_t>(tensor.shape[rank - 1]);
  const std::uint64_t inner_stride = rank == 0 ? 1 : static_cast<std::uint64_t>(strides[rank - 1]);
  std::vector<std::int64_t> index(rank == 0 ? 0 : rank - 1, 0);
  std::uint64_t source = 0;  // element offset of the current row's first element
  for (std::size_t written = 0; written < out.size();) {
    std::byte* dst = out.data() + written;
    if (inner_stride == 1) {
      std::memcpy(dst, encoded.data() + source * elem, inner * elem);
    } else {
      for (std::uint64_t i = 0; i < inner; ++i)
        std::memcpy(dst + i * elem, encoded.data() + (source + i * inner_stride) * elem, elem);
    }
    written += static_cast<std::size_t>(inner * elem);
    for (std::size_t d = index.size(); d-- > 0;) {  // next row: an odometer over the outer dimensions
      source += static_cast<std::uint64_t>(strides[d]);
      if (++index[d] < tensor.shape[d]) break;
      source -= static_cast<std::uint64_t>(strides[d]) * static_cast<std::uint64_t>(tensor.shape[d]);
      index[d] = 0;
    }
  }
}

void decode_tensor(const TensorInfo& tensor, std::span<const std::byte> encoded, std::span<std::byte> out,
                   const std::filesystem::path& file) {
  if (out.size() != tensor.bytes)
    fail(ErrorCode::usage, file.string(), ": tensor '", tensor.name, "': decode buffer holds ", out.size(),
         " bytes, the tensor ", tensor.bytes);
  switch (tensor.encoding) {
    case Encoding::raw:
      fail(ErrorCode::usage, file.string(), ": tensor '", tensor.name, "': raw tensors need no decoding");
    case Encoding::onnx_varint:
    case Encoding::onnx_fixed: return decode_onnx_fields(tensor, encoded, out, file);
    case Encoding::sparse: return densify(tensor, encoded, out, file);
    case Encoding::strided: return restride(tensor, encoded, out, file);
  }
  fail(ErrorCode::usage, file.string(), ": tensor '", tensor.name, "': unknown encoding");
}

}  // namespace lwload::formats
