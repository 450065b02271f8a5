// lwload::load: plans when asked to, checks a given plan against the manifest and the device, and
// runs a LoadSession.
#include "core/align.hpp"
#include "load/load_session.hpp"
#include "lwload/error.hpp"
#include "plan/schedule.hpp"

namespace lwload {
namespace {

// A plan from elsewhere (another process, an older manifest, an edited one) must not index out of
// bounds or leave a tensor unread: its placements and regions are checked here, and its schedule,
// a function of them, is made again by the planner.
void check_plan(const Manifest& manifest, const Device& device, Plan& plan) {
  if (plan.device != device.info().id())
    fail(ErrorCode::usage, "the plan was made for device ", plan.device, ", not ", device.info().id());
  if (plan.tensors.size() != manifest.tensors.size())
    fail(ErrorCode::usage, "the plan does not match the manifest (", plan.tensors.size(), " tensors planned, ",
         manifest.tensors.size(), " in the manifest)");
  // Each zero_copy tensor is listed by the region it names, and only there (one pass: plans may
  // hold millions).
  std::vector<std::size_t> listed(plan.tensors.size(), no_region);
  for (std::size_t r = 0; r < plan.regions.size(); ++r) {
    const ImportRegion& region = plan.regions[r];
    // A declined region holds no tensors (so no zero_copy tensor can name it); an imported one
    // imports its tensors' bytes and lies within the pages it maps.
    const bool fits = region.imported() ? region.length >= region.used && region.map_offset <= region.offset &&
                                              region.offset + region.length <= region.map_offset + region.map_length
                                        : region.tensors.empty();
    if (region.file >= manifest.files.size() || !fits)
      fail(ErrorCode::usage, "the plan's import region at offset ", region.offset, " does not match the manifest");
    for (std::size_t index : region.tensors) {
      if (index >= manifest.tensors.size() || listed[index] != no_region)
        fail(ErrorCode::usage, "the plan's region ", r, " names tensor ", index, " of ", manifest.tensors.size(),
             " (or one another region names)");
      const TensorInfo& t = manifest.tensors[index];
      if (t.pieces.size() != 1 || t.pieces[0].file != region.file || t.pieces[0].offset < region.offset ||
          t.pieces[0].offset + t.pieces[0].length > region.offset + region.used)
        fail(ErrorCode::usage, "the plan's import region does not contain tensor '", t.name, "'");
      listed[index] = r;
    }
  }
  for (std::size_t i = 0; i < plan.tensors.size(); ++i) {
    const TensorPlan& tp = plan.tensors[i];
    if (tp.placement == Placement::zero_copy &&
        (tp.region >= plan.regions.size() || listed[i] != tp.region ||
         tp.region_offset != manifest.tensors[i].pieces[0].offset - plan.regions[tp.region].offset))
      fail(ErrorCode::usage, "the plan places tensor '", manifest.tensors[i].name,
           "' zero_copy without a region that holds it");
  }
  if (plan.count(Placement::staged) > 0 && (plan.staging_slots == 0 || plan.slot_bytes < kDirectIoAlignment))
    fail(ErrorCode::usage, "the plan stages tensors but has no staging slots");
  planning::schedule(manifest, plan);
}

Weights run(Manifest&& manifest, Device& device, Plan plan, const LoadOptions& options) {
  loading::LoadSession session(std::move(manifest), device, std::move(plan), options);
  return session.run();
}

}  // namespace

// A plan made here is trusted; one handed in is checked once against the manifest and the device.
Weights load(const Manifest& manifest, Device& device, const LoadOptions& options) {
  return load(Manifest(manifest), device, options);
}

Weights load(Manifest&& manifest, Device& device, const LoadOptions& options) {
  // A lazy load is planned as one: its evictable pages need not fit the machine's memory.
  PlanOptions plan_options = options.plan;
  plan_options.lazy = plan_options.lazy || options.lazy;
  Plan plan = make_plan(manifest, device.info(), plan_options);
  return run(std::move(manifest), device, std::move(plan), options);
}

Weights load(const Manifest& manifest, Device& device, const Plan& plan, const LoadOptions& options) {
  return load(Manifest(manifest), device, Plan(plan), options);
}

Weights load(Manifest&& manifest, Device& device, Plan plan, const LoadOptions& options) {
  check_plan(manifest, device, plan);
  return run(std::move(manifest), device, std::move(plan), options);
}

}  // namespace lwload
