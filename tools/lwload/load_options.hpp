// The options every command that plans or loads shares (--device, --memory, --max-alloc,
// --placement, --budget, --slots, --only, --io, --direct-io): their help text and their parsing,
// in one place so plan, load, profile and bench stay consistent.
#pragma once

#include <string>
#include <vector>

#include "cli.hpp"
#include "lwload/device.hpp"
#include "lwload/loader.hpp"
#include "lwload/plan.hpp"

namespace lwload::cli {

OptionSpec device_option();
OptionSpec memory_option();
OptionSpec max_alloc_option();
OptionSpec placement_option();
OptionSpec budget_option();
OptionSpec slots_option();
OptionSpec only_option(std::string_view verb);  // "load", "plan"
OptionSpec io_option();
OptionSpec direct_io_option();
OptionSpec lazy_option();
OptionSpec links_option();    // --allow-outside-links
OptionSpec densify_option();  // --densify
OptionSpec range_option();    // --range OFFSET:LENGTH (open_model opens the file's descriptor)

// Each reads only the options the command declared.
// The model at positional 0, opened with --allow-outside-links, --densify and --range when given.
Manifest open_model(const Args& args, OpenOptions options = {});
DeviceOverrides device_overrides(const Args& args);
PlanOptions plan_options(const Args& args);
void apply_io_options(const Args& args, LoadOptions& options);  // --io, --direct-io, --lazy

// One stderr line per tensor the plan (as executed) did not place as --placement asked, with why.
void warn_unhonoured_placement(const PlanOptions& asked, const Plan& plan, const Manifest& manifest);

using lwload::split_names;  // load/option_text.hpp

}  // namespace lwload::cli
