// lwload synth: placeholder until its issue lands.
#include "cli.hpp"
#include "lwload/error.hpp"

namespace lwload::cli {

int cmd_synth(int, char**) { fail(ErrorCode::unsupported, "lwload synth is not implemented yet"); }

}  // namespace lwload::cli
