// lwload plan: placeholder until its issue lands.
#include "cli.hpp"
#include "lwload/error.hpp"

namespace lwload::cli {

int cmd_plan(int, char**) { fail(ErrorCode::unsupported, "lwload plan is not implemented yet"); }

}  // namespace lwload::cli
