// Layer guard of lib/formats/safetensors/, the safetensors wing (docs/ARCHITECTURE.md, "Layers"): every header of
// the layer includes it. The layer table in meson.build defines LWLOAD_LAYER_FORMATS_SAFETENSORS only where this
// layer is visible: in its own library and in the layers that declare it (directly or through another).
#pragma once

#if !defined(LWLOAD_LAYER_FORMATS_SAFETENSORS)
#error \
    "lwload layering: lib/formats/safetensors/ is not below this layer (the layer table in meson.build says what each layer may include)"
#endif
