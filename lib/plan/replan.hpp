// The planner's two re-plans of the load itself (the third, replan_declined, is public in
// lwload/plan.hpp): a plan handed to load() is derived again from the manifest, the device and its
// own choices, and fit-checked against the machine now; and a mechanism the kernel or the device
// refuses when the load sets up its reads (O_DIRECT, io_uring) is re-planned here, with the
// reason, so the plan the load keeps (Weights::plan) is the record of what ran.
#pragma once

#include "plan/layer.hpp"

#include <string>

#include "lwload/machine.hpp"
#include "lwload/plan.hpp"

namespace lwload::plan {

// A plan made elsewhere (another process, an older manifest, an edited one). Its choices are the
// placements, the regions' tensors (and which regions were declined) and its options; every
// figure that follows from them — each region's offset, used, length, map_offset and map_length,
// each zero_copy tensor's region_offset, the staging ring, the byte totals, the host-memory
// figures — is derived again and compared, and a stored figure that differs is refused with
// Error(usage) naming the field and the region or tensor. The device's limits are checked as
// make_plan checks them (Error(does_not_fit)), and the host memory against `machine` (what the
// machine has now), as make_plan would, without declining anything: a plan that no longer fits is
// refused with Error(does_not_fit). The schedule is then made again. On return `plan` holds the
// derived figures and its verdict against `machine`.
void check_handed_in(const Manifest& manifest, const DeviceInfo& device, Plan& plan, const MachineMemory& machine);

// What the kernel or the device refused when the load set up its reads; empty: nothing.
struct LoadRefusals {
  std::string direct_io;  // why O_DIRECT could not be used (the file system, the staging slots)
  std::string engine;     // why io_uring could not be used (the kernel would not make a ring)
};

// The schedule re-planned after `refused`: staged reads buffered (plan.direct_io false, the reason
// saying why, the staged reads re-chunked to whole slots) and/or the pread pool as the engine
// (plan.schedule.engine and engine_reason). Only before the first read.
void replan_refused(const Manifest& manifest, Plan& plan, const LoadRefusals& refused);

}  // namespace lwload::plan
