// TensorType → canonical dtype, for TFLite (schema.fbs TensorType) and Circle (same values plus
// negative ones for its extensions).
#include "formats/tflite/tflite_dtype.hpp"

#include "lwload/error.hpp"

namespace lwload::formats {

DType tflite_dtype(std::int8_t type, TfliteFlavor flavor, const std::filesystem::path& file, std::string_view tensor) {
  switch (type) {
    case 0: return DType::F32;     // FLOAT32
    case 1: return DType::F16;     // FLOAT16
    case 2: return DType::I32;     // INT32
    case 3: return DType::U8;      // UINT8
    case 4: return DType::I64;     // INT64
    case 5: return DType::STRING;  // STRING (TFLite's own offset table + bytes)
    case 6: return DType::BOOL;    // BOOL
    case 7: return DType::I16;     // INT16
    case 8: return DType::C64;     // COMPLEX64
    case 9: return DType::I8;      // INT8
    case 10: return DType::F64;    // FLOAT64
    case 11: return DType::C128;   // COMPLEX128
    case 12: return DType::U64;    // UINT64
    case 13:                       // RESOURCE
    case 14:                       // VARIANT
      fail(ErrorCode::unsupported, file.string(), ": tensor '", tensor, "': type ", type == 13 ? "RESOURCE" : "VARIANT",
           " (", int{type}, ") is a runtime handle, not weights; lwload cannot place its buffer");
    case 15: return DType::U32;   // UINT32
    case 16: return DType::U16;   // UINT16
    case 17: return DType::I4;    // INT4, two per byte
    case 18: return DType::BF16;  // BFLOAT16 (TFLite; Circle may adopt the same value)
    default: break;
  }
  if (flavor == TfliteFlavor::circle) {
    switch (type) {
      case -1:
        fail(ErrorCode::unsupported, file.string(), ": tensor '", tensor,
             "': Circle type UINT4 (-1) has no canonical lwload dtype");
      case -2: return DType::Q4_0;  // GGML_Q4_0
      case -3: return DType::Q4_1;  // GGML_Q4_1
      case -4: return DType::Q8_0;  // GGML_Q8_0
      case -5: return DType::Q8_1;  // GGML_Q8_1
      default: break;
    }
  }
  fail(ErrorCode::bad_input, file.string(), ": tensor '", tensor, "': field type: unknown ",
       flavor == TfliteFlavor::circle ? "Circle" : "TFLite", " TensorType ", int{type});
}

}  // namespace lwload::formats
