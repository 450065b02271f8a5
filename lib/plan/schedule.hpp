// The schedule half of the planner: once the placements are settled (make_plan, and again after
// every re-plan), how their bytes move — O_DIRECT or buffered, the read engine, and every read in
// its queue (include/lwload/plan.hpp, Schedule). The loader executes it and derives nothing.
#pragma once

#include "plan/layer.hpp"

#include "lwload/plan.hpp"

namespace lwload::plan {

// Fills plan.direct_io, plan.direct_io_reason and plan.schedule from the placements, the staging
// ring, the page-cache residency and plan.options.
void schedule(const Manifest& manifest, Plan& plan);

}  // namespace lwload::plan
