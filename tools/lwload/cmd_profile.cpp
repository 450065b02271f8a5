// lwload profile: placeholder until its issue lands.
#include "cli.hpp"
#include "lwload/error.hpp"

namespace lwload::cli {

int cmd_profile(int, char**) { fail(ErrorCode::unsupported, "lwload profile is not implemented yet"); }

}  // namespace lwload::cli
