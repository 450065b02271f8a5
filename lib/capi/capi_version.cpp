// lwload_version / lwload_version_number, and the check that lwload.h's LWLOAD_VERSION_* (written
// by hand in a plain C header) equal meson's project version (which version.hpp is generated from).
//
// lwload.h comes first and alone: its numbers are captured before version.hpp defines the same
// macros, so a stale lwload.h stops the build here with a message saying what to update.
#include "lwload/lwload.h"

namespace {
constexpr int c_header_version[] = {LWLOAD_VERSION_MAJOR, LWLOAD_VERSION_MINOR, LWLOAD_VERSION_PATCH};
constexpr long c_header_number = LWLOAD_VERSION_NUMBER;
}  // namespace

#undef LWLOAD_VERSION_MAJOR
#undef LWLOAD_VERSION_MINOR
#undef LWLOAD_VERSION_PATCH
#include "lwload/version.hpp"

static_assert(c_header_version[0] == LWLOAD_VERSION_MAJOR && c_header_version[1] == LWLOAD_VERSION_MINOR &&
                  c_header_version[2] == LWLOAD_VERSION_PATCH,
              "include/lwload/lwload.h: LWLOAD_VERSION_MAJOR/MINOR/PATCH differ from meson.build's project version");
static_assert(c_header_number == LWLOAD_VERSION_MAJOR * 1000000L + LWLOAD_VERSION_MINOR * 1000L + LWLOAD_VERSION_PATCH);

extern "C" {

// lwload::version() is LWLOAD_VERSION, the same project version as the numbers checked above.
const char* lwload_version(void) { return lwload::version(); }

uint32_t lwload_version_number(void) { return static_cast<uint32_t>(c_header_number); }

}  // extern "C"
