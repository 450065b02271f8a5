// The backends compiled into this build, and the registry that starts with them.
#include "backends/builtin.hpp"

namespace lwload {

std::vector<std::shared_ptr<Backend>> builtin_backends() {
#define LWLOAD_MAKE(name) make_##name##_backend(),
  return {LWLOAD_BUILTIN_BACKENDS(LWLOAD_MAKE)};
#undef LWLOAD_MAKE
}

BackendRegistry& BackendRegistry::instance() {
  static BackendRegistry registry(builtin_backends());
  return registry;
}

}  // namespace lwload
