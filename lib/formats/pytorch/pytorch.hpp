// The PyTorch (torch.save ZIP and legacy) reader (pytorch.cpp), as formats/registry/registry.cpp lists it.
#pragma once

#include "formats/pytorch/layer.hpp"

#include "formats/format.hpp"

namespace lwload::formats {

extern const FormatReader pytorch_reader;

}  // namespace lwload::formats
