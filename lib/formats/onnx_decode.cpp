// Placeholder: ONNX typed-field decoding lands with the ONNX reader.
#include "formats/encoded.hpp"
#include "lwload/error.hpp"

namespace lwload::formats {

void decode_tensor(const TensorInfo& tensor, std::span<const std::byte>, std::span<std::byte>,
                   const std::filesystem::path& file) {
  fail(ErrorCode::unsupported, file.string(), ": tensor '", tensor.name, "': encoding ",
       encoding_name(tensor.encoding), " is not supported yet");
}

}  // namespace lwload::formats
