// The TFJS reader (tfjs.cpp), as formats/registry/registry.cpp lists it.
#pragma once

#include "formats/tfjs/layer.hpp"

#include "formats/format.hpp"

namespace lwload::formats {

extern const FormatReader tfjs_reader;

}  // namespace lwload::formats
