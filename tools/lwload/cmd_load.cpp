// lwload load: placeholder until its issue lands.
#include "cli.hpp"
#include "lwload/error.hpp"

namespace lwload::cli {

int cmd_load(int, char**) { fail(ErrorCode::unsupported, "lwload load is not implemented yet"); }

}  // namespace lwload::cli
