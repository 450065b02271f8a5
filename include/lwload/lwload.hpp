// The whole C++ API in one include: manifests, devices and backends, planning, loading.
#pragma once

// Layer loading's public header: refused below loading in lwload's build (docs/ARCHITECTURE.md, "Layers").
#if defined(LWLOAD_LAYER_CORE) && !defined(LWLOAD_LAYER_LOADING)
#error \
    "lwload layering: include/lwload/lwload.hpp (layer loading) is not below this layer (the layer table in meson.build says what each layer may include)"
#endif

#include "lwload/backend.hpp"
#include "lwload/device.hpp"
#include "lwload/dtype.hpp"
#include "lwload/error.hpp"
#include "lwload/file_system.hpp"
#include "lwload/loader.hpp"
#include "lwload/manifest.hpp"
#include "lwload/manifest_json.hpp"
#include "lwload/memory_file_system.hpp"
#include "lwload/plan.hpp"
#include "lwload/version.hpp"
