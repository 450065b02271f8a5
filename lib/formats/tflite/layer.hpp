// Layer guard of lib/formats/tflite/, the TFLite/Circle wing (FlatBuffers) (docs/ARCHITECTURE.md, "Layers"): every
// header of the layer includes it. The layer table in meson.build defines LWLOAD_LAYER_FORMATS_TFLITE only where this
// layer is visible: in its own library and in the layers that declare it (directly or through another).
#pragma once

#if !defined(LWLOAD_LAYER_FORMATS_TFLITE)
#error \
    "lwload layering: lib/formats/tflite/ is not below this layer (the layer table in meson.build says what each layer may include)"
#endif
