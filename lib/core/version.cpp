// lwload::version(): compiled into the library, so a program can tell which build it runs with.
#include "lwload/version.hpp"

namespace lwload {

const char* version() noexcept { return LWLOAD_VERSION; }

}  // namespace lwload
