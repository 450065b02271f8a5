// lwload bench: placeholder until its issue lands.
#include "cli.hpp"
#include "lwload/error.hpp"

namespace lwload::cli {

int cmd_bench(int, char**) { fail(ErrorCode::unsupported, "lwload bench is not implemented yet"); }

}  // namespace lwload::cli
