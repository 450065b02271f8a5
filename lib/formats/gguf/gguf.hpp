// The GGUF reader (gguf.cpp), as formats/registry/registry.cpp lists it.
#pragma once

#include "formats/gguf/layer.hpp"

#include "formats/format.hpp"

namespace lwload::formats {

extern const FormatReader gguf_reader;

}  // namespace lwload::formats
