// The TFLite / Circle reader (tflite.cpp), as formats/registry/registry.cpp lists it.
#pragma once

#include "formats/tflite/layer.hpp"

#include "formats/format.hpp"

namespace lwload::formats {

extern const FormatReader tflite_reader;

}  // namespace lwload::formats
