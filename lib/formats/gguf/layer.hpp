// Layer guard of lib/formats/gguf/, the GGUF wing (docs/ARCHITECTURE.md, "Layers"): every header of
// the layer includes it. The layer table in meson.build defines LWLOAD_LAYER_FORMATS_GGUF only where this
// layer is visible: in its own library and in the layers that declare it (directly or through another).
#pragma once

#if !defined(LWLOAD_LAYER_FORMATS_GGUF)
#error \
    "lwload layering: lib/formats/gguf/ is not below this layer (the layer table in meson.build says what each layer may include)"
#endif
