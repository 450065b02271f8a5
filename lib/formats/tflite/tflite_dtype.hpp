// TensorType (TFLite and Circle) → lwload's canonical dtype. Kept apart from the reader so the
// mapping, and the decisions about types that hold no weights, live in one small table.
#pragma once

#include "formats/tflite/layer.hpp"

#include <cstdint>
#include <filesystem>
#include <string_view>

#include "lwload/dtype.hpp"

namespace lwload::formats {

enum class TfliteFlavor { tflite, circle };

// The canonical dtype of a tensor with data. Fails with
//  - Error(unsupported) for types that are valid but are not weights lwload can place:
//    RESOURCE and VARIANT (runtime handles) and Circle's UINT4 (no canonical name);
//  - Error(bad_input) for a value neither schema defines.
// Circle's negative values are ggml block types (GGML_Q4_0 → Q4_0, ...).
DType tflite_dtype(std::int8_t type, TfliteFlavor flavor, const std::filesystem::path& file, std::string_view tensor);

}  // namespace lwload::formats
