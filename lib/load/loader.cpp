// lwload::load: plans when asked to, checks a given plan against the manifest and the device, and
// runs a LoadSession.
#include <algorithm>

#include "load/load_session.hpp"
#include "lwload/error.hpp"

namespace lwload {
namespace {

// A plan from elsewhere (another process, an older manifest) must not index out of bounds.
void check_plan(const Manifest& manifest, const Device& device, const Plan& plan) {
  if (plan.device != device.info().id())
    fail(ErrorCode::usage, "the plan was made for device ", plan.device, ", not ", device.info().id());
  std::size_t previous = 0;
  for (std::size_t i = 0; i < plan.tensors.size(); ++i) {
    const TensorPlan& tp = plan.tensors[i];
    if (tp.tensor >= manifest.tensors.size() || (i > 0 && tp.tensor <= previous))
      fail(ErrorCode::usage, "the plan does not match the manifest (tensor index ", tp.tensor, " of ",
           manifest.tensors.size(), ")");
    previous = tp.tensor;
    if (tp.placement == Placement::zero_copy && tp.region >= plan.regions.size())
      fail(ErrorCode::usage, "the plan places tensor '", manifest.tensors[tp.tensor].name,
           "' zero_copy without a region that holds it");
  }
  // Each zero_copy tensor is listed by the region it names (one pass: plans may hold millions).
  std::vector<std::size_t> listed(plan.tensors.size(), no_region);
  for (std::size_t r = 0; r < plan.regions.size(); ++r)
    for (std::size_t index : plan.regions[r].tensors)
      if (const TensorPlan* tp = plan.find(index)) listed[static_cast<std::size_t>(tp - plan.tensors.data())] = r;
  for (std::size_t i = 0; i < plan.tensors.size(); ++i)
    if (plan.tensors[i].placement == Placement::zero_copy && listed[i] != plan.tensors[i].region)
      fail(ErrorCode::usage, "the plan places tensor '", manifest.tensors[plan.tensors[i].tensor].name,
           "' zero_copy without a region that holds it");
  for (const ImportRegion& r : plan.regions) {
    if (r.file >= manifest.files.size() || r.length < r.used)
      fail(ErrorCode::usage, "the plan's import region at offset ", r.offset, " does not match the manifest");
    for (std::size_t index : r.tensors) {
      if (index >= manifest.tensors.size()) fail(ErrorCode::usage, "the plan's region names tensor ", index);
      const TensorInfo& t = manifest.tensors[index];
      if (t.pieces.size() != 1 || t.pieces[0].file != r.file || t.pieces[0].offset < r.offset ||
          t.pieces[0].offset + t.pieces[0].length > r.offset + r.used)
        fail(ErrorCode::usage, "the plan's import region does not contain tensor '", t.name, "'");
    }
  }
  if (plan.count(Placement::staged) > 0 && (plan.staging_slots == 0 || plan.slot_bytes == 0))
    fail(ErrorCode::usage, "the plan stages tensors but has no staging slots");
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
  Plan plan = make_plan(manifest, device.info(), options.plan);
  return run(std::move(manifest), device, std::move(plan), options);
}

Weights load(const Manifest& manifest, Device& device, const Plan& plan, const LoadOptions& options) {
  check_plan(manifest, device, plan);
  return run(Manifest(manifest), device, Plan(plan), options);
}

Weights load(Manifest&& manifest, Device& device, Plan plan, const LoadOptions& options) {
  check_plan(manifest, device, plan);
  return run(std::move(manifest), device, std::move(plan), options);
}

}  // namespace lwload
