// The read engines lwload moves file bytes with (PlanOptions::io, Schedule::engine), by name. The io
// layer defines them (lib/io/io_engine.cpp); the planner chooses one.
#pragma once

// Layer io's public header: refused below io in lwload's build (docs/ARCHITECTURE.md, "Layers").
#if defined(LWLOAD_LAYER_CORE) && !defined(LWLOAD_LAYER_IO)
#error \
    "lwload layering: include/lwload/io_engine.hpp (layer io) is not below this layer (the layer table in meson.build says what each layer may include)"
#endif

#include <cstdint>
#include <string_view>

#include "lwload/export.h"

namespace lwload {

// How file bytes are read for direct and staged tensors.
enum class IoEngine : std::uint8_t {
  auto_,     // the pread pool: measured faster than io_uring for page-cache hits and O_DIRECT
  io_uring,  // Boost.Asio random_access_file on io_uring (falls back, with the reason, if refused)
  pread,     // pread(2) on a small thread pool (always available; the only one for test files)
};
LWLOAD_API std::string_view io_engine_name(IoEngine engine) noexcept;  // "auto", "io_uring", "pread"
LWLOAD_API IoEngine parse_io_engine(std::string_view text);            // throws Error(usage)

}  // namespace lwload
