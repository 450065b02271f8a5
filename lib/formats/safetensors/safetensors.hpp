// The safetensors reader (safetensors.cpp), as formats/registry/registry.cpp lists it.
#pragma once

#include "formats/safetensors/layer.hpp"

#include "formats/format.hpp"

namespace lwload::formats {

extern const FormatReader safetensors_reader;

}  // namespace lwload::formats
