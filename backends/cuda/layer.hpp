// Layer guard of backends/cuda/ (docs/ARCHITECTURE.md, "Layers"): every header of the layer includes it.
// The layer table in meson.build defines LWLOAD_LAYER_BACKEND_CUDA only where this layer is visible:
// in its own library and in the layers that declare it as a dependency (directly or through another).
#pragma once

#if !defined(LWLOAD_LAYER_BACKEND_CUDA)
#error \
    "lwload layering: backends/cuda/ is not below this layer (the layer table in meson.build says what each layer may include)"
#endif
