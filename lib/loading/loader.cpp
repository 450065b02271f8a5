// lwload::load: plans when asked to, derives a given plan again from the manifest, the device and
// its choices (refusing one whose figures differ or which no longer fits the machine), and runs a
// LoadRun.
#include "loading/load_run.hpp"
#include "lwload/error.hpp"
#include "plan/replan.hpp"

namespace lwload {
namespace {

using Clock = std::chrono::steady_clock;

Weights run(Manifest&& manifest, Device& device, Plan plan, const LoadOptions& options, Clock::time_point called) {
  loading::LoadRun load_run(std::move(manifest), device, std::move(plan), options, called);
  return load_run.run();
}

}  // namespace

// A plan made here is trusted; one handed in (another process, an older manifest, an edited one)
// must not index out of bounds, leave a tensor unread or hold figures the loader would act on
// unchecked: the planner derives it again and checks its fit against the machine now.
Weights load(const Manifest& manifest, Device& device, const LoadOptions& options) {
  return load(Manifest(manifest), device, options);
}

Weights load(Manifest&& manifest, Device& device, const LoadOptions& options) {
  const auto called = Clock::now();
  // A lazy load is planned as one: its evictable pages need not fit the machine's memory.
  PlanOptions plan_options = options.plan;
  plan_options.lazy = plan_options.lazy || options.lazy;
  Plan plan = make_plan(manifest, device.info(), plan_options);
  return run(std::move(manifest), device, std::move(plan), options, called);
}

Weights load(const Manifest& manifest, Device& device, const Plan& plan, const LoadOptions& options) {
  return load(Manifest(manifest), device, Plan(plan), options);
}

Weights load(Manifest&& manifest, Device& device, Plan plan, const LoadOptions& options) {
  const auto called = Clock::now();
  plan::check_handed_in(manifest, device.info(), plan, options.plan.machine ? *options.plan.machine : machine_memory());
  return run(std::move(manifest), device, std::move(plan), options, called);
}

}  // namespace lwload
