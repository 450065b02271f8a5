#include "load_options.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>

#include "lwload/error.hpp"

namespace lwload::cli {

OptionSpec device_option() { return {"--device", "D", "BACKEND[:INDEX] or auto", "auto"}; }
OptionSpec memory_option() { return {"--memory", "M", "override the device's memory model: unified or discrete", ""}; }
OptionSpec max_alloc_option() {
  return {"--max-alloc", "BYTES", "override (lower) the device's largest allocation", ""};
}
OptionSpec placement_option() { return {"--placement", "P", "auto, zero-copy, direct or staged", "auto"}; }
OptionSpec budget_option() { return {"--budget", "BYTES", "staging budget", "64MiB"}; }
OptionSpec slots_option() { return {"--slots", "N", "staging slots", "4"}; }
OptionSpec only_option(std::string_view verb) {
  return {"--only", "NAMES", str("comma-separated tensor names to ", verb), ""};
}
OptionSpec io_option() { return {"--io", "E", "auto, io_uring or pread", "auto"}; }
OptionSpec direct_io_option() {
  return {"--direct-io", "", "read staged tensors with O_DIRECT (default: when their files are not in the page cache)",
          ""};
}
OptionSpec links_option() {
  return {"--allow-outside-links", "", "follow links out of the model folder (weights linked from a shared cache)", ""};
}
OptionSpec densify_option() {
  return {"--densify", "", "load sparse tensors (TFLite) densified instead of as their stored values", ""};
}
OptionSpec lazy_option() {
  return {"--lazy", "", "zero-copy tensors are ready once imported; their pages fault in on first use", ""};
}

OptionSpec range_option() {
  return {"--range", "OFFSET:LENGTH", "the model is these bytes of the file (an asset stored in an APK or zip)", ""};
}

Manifest open_model(const Args& args, OpenOptions options) {
  if (const auto links = args.get_optional("--allow-outside-links"))
    set_open_option(options, "allow-outside-links", *links);
  if (const auto densify = args.get_optional("--densify")) set_open_option(options, "densify", *densify);
  const std::string path = args.positional(0);
  const auto range = args.get_optional("--range");
  if (!range) return open_manifest(path, options);
  // The way an application hands over an asset: a descriptor and the model's bytes in it.
  const std::size_t colon = range->find(':');
  if (colon == std::string::npos) fail(ErrorCode::usage, "--range: '", *range, "' is not OFFSET:LENGTH");
  const std::uint64_t offset = parse_size(std::string_view(*range).substr(0, colon), "--range offset");
  const std::uint64_t length = parse_size(std::string_view(*range).substr(colon + 1), "--range length");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(ErrorCode::io, path, ": cannot open: ", std::strerror(errno));
  try {
    Manifest manifest = open_manifest_fd(fd, offset, length, options);
    ::close(fd);  // the manifest holds its own duplicate
    return manifest;
  } catch (...) {
    ::close(fd);
    throw;
  }
}

DeviceOverrides device_overrides(const Args& args) {
  DeviceOverrides overrides;
  if (const auto memory = args.get_optional("--memory")) {
    if (*memory == "unified") overrides.memory = MemoryModel::unified;
    else if (*memory == "discrete") overrides.memory = MemoryModel::discrete;
    else fail(ErrorCode::usage, "--memory: '", *memory, "' is not unified or discrete");
  }
  if (args.get_optional("--max-alloc")) overrides.max_alloc = args.get_size("--max-alloc");
  return overrides;
}

namespace {

// Each of `names` the command line gave, through the parser the C API shares (load/option_text).
void set_given(const Args& args, LoadOptions& options, std::initializer_list<std::string_view> names) {
  for (std::string_view name : names) {
    const std::string option = str("--", name);
    if (const auto value = args.get_optional(option)) set_load_option(options, name, *value);
  }
}

}  // namespace

PlanOptions plan_options(const Args& args) {
  LoadOptions options;
  set_given(args, options, {"placement", "budget", "slots", "only", "direct-io"});
  return options.plan;
}

void apply_io_options(const Args& args, LoadOptions& options) {
  // Flags as given (--lazy=false included) override what the command chose.
  set_given(args, options, {"io", "lazy"});
}

void warn_unhonoured_placement(const PlanOptions& asked, const Plan& plan, const Manifest& manifest) {
  if (!asked.force) return;
  for (std::size_t i = 0; i < plan.tensors.size(); ++i) {
    const TensorPlan& tp = plan.tensors[i];
    if (tp.placement != *asked.force && tp.placement != Placement::skipped)
      std::cerr << "lwload: warning: --placement " << placement_name(*asked.force) << " not honoured for tensor '"
                << printable(manifest.tensors[i].name) << "': " << tp.reason << '\n';
  }
}

}  // namespace lwload::cli
