// formats::decode_tensor: one entry for every encoding a reader may give a tensor.
#include "formats/encoded.hpp"
#include "lwload/error.hpp"

namespace lwload::formats {

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
  }
  fail(ErrorCode::usage, file.string(), ": tensor '", tensor.name, "': unknown encoding");
}

}  // namespace lwload::formats
