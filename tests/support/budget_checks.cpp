#include "support/budget_checks.hpp"

#include "lwload/backend.hpp"
#include "lwload/plan.hpp"
#include "support/test_support.hpp"
#include "synth/synth.hpp"

namespace lwload::test {

void check_device_budgets(const std::string& device) {
  CAPTURE(device);
  TempDir dir;
  synth::SynthSpec spec;
  spec.total_bytes = 4 << 20;
  spec.tensor_count = 4;
  spec.alignment = 4096;
  synth::write_model(dir / "m.safetensors", spec);
  const Manifest m = open_manifest(dir / "m.safetensors");

  // Less free than the staged tensors need: refused by the plan, naming what is free.
  {
    DeviceOverrides low;
    low.memory_available = 1 << 20;
    const auto d = open_device(device, low);
    LoadOptions options;
    options.plan.force = Placement::staged;
    const Error e = error_of([&] { (void)load(m, *d, options); });
    CHECK(e.code() == ErrorCode::does_not_fit);
    const std::string what = e.what();
    CHECK(what.find("1048576 bytes free") != std::string::npos);
    CHECK(what.find("nothing was allocated") != std::string::npos);
  }

  // An import limit of two regions' bytes: the first two stay zero_copy, the rest move.
  DeviceOverrides split;
  split.max_alloc = (1 << 20) + (64 << 10);  // a region per tensor
  const auto probe = open_device(device, split);
  const Plan unlimited = make_plan(m, probe->info());
  if (unlimited.regions.size() < 4) {
    MESSAGE(device, " does not import host memory: no import limit to check");
    return;
  }
  split.import_limit = unlimited.regions[0].length + unlimited.regions[1].length;
  const auto limited = open_device(device, split);
  const Weights w = load(m, *limited);
  CHECK(w.plan().imported_regions() == 2);
  CHECK(w.plan().regions.size() == unlimited.regions.size());  // the others declined, keeping their numbers
  CHECK(w.plan().mapped_bytes <= *split.import_limit);
  CHECK(w.plan().count(Placement::zero_copy) ==
        unlimited.regions[0].tensors.size() + unlimited.regions[1].tensors.size());
  for (const TensorPlan& tp : w.plan().tensors)
    if (tp.placement != Placement::zero_copy) CHECK(tp.reason.find("imports at most") != std::string::npos);
  CHECK(verify(w).tensors == m.tensors.size());

  // Where the moved tensors do not fit the memory left either, the plan says so.
  split.memory_available = 1 << 20;
  const auto tight = open_device(device, split);
  CHECK(error_of([&] { (void)load(m, *tight); }).code() == ErrorCode::does_not_fit);
}

}  // namespace lwload::test
