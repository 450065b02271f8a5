// Layer guard of lib/formats/decode/, the decoders of encoded tensors, above the wings (docs/ARCHITECTURE.md,
// "Layers"): every header of the layer includes it. The layer table in meson.build defines LWLOAD_LAYER_FORMATS_DECODE
// only where this layer is visible: in its own library and in the layers that declare it (directly or through another).
#pragma once

#if !defined(LWLOAD_LAYER_FORMATS_DECODE)
#error \
    "lwload layering: lib/formats/decode/ is not below this layer (the layer table in meson.build says what each layer may include)"
#endif
