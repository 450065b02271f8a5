// The ONNX reader (onnx.cpp), as formats/registry/registry.cpp lists it.
#pragma once

#include "formats/onnx/layer.hpp"

#include "formats/format.hpp"

namespace lwload::formats {

extern const FormatReader onnx_reader;

}  // namespace lwload::formats
