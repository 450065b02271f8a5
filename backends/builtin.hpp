// The backends compiled into this build, registered by BackendRegistry on first use: those of
// backends/meson.build's table this build has (LWLOAD_BUILTIN_BACKENDS, made from that table).
#pragma once

#include "backends/layer.hpp"

#include <memory>
#include <vector>

#include "backends/builtin_list.hpp"
#include "lwload/backend.hpp"

namespace lwload {

std::vector<std::shared_ptr<Backend>> builtin_backends();

// Each backend's maker, make_<name>_backend, defined in its folder's backend.cpp.
#define LWLOAD_DECLARE_MAKER(name) std::shared_ptr<Backend> make_##name##_backend();
LWLOAD_BUILTIN_BACKENDS(LWLOAD_DECLARE_MAKER)
#undef LWLOAD_DECLARE_MAKER

}  // namespace lwload
