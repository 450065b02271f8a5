// The backend registry and device selection ("BACKEND[:INDEX]" / "auto"). Device and DeviceBuffer
// methods are in device.cpp.
#include <type_traits>
#include <string>
#include <mutex>
#include <limits>
#include <deque>
#include <algorithm>
#include <charconv>

#include "lwload/backend.hpp"
#include "lwload/backend_impl.hpp"
#include "lwload/error.hpp"

namespace lwload {

std::string_view device_kind_name(DeviceKind kind) noexcept {
  switch (kind) {
    case DeviceKind::cpu: return "cpu";
    case DeviceKind::igpu: return "igpu";
    case DeviceKind::dgpu: return "dgpu";
    case DeviceKind::npu: return "npu";
    case DeviceKind::accelerator: return "accelerator";
  }
  return "?";
}

std::string_view memory_model_name(MemoryModel memory) noexcept {
  return memory == MemoryModel::unified ? "unified" : "discrete";
}

std::string_view pinning_name(Pinning pinning) noexcept {
  switch (pinning) {
    case Pinning::no: return "no";
    case Pinning::yes: return "yes";
    case Pinning::unknown: return "unknown";
  }
  return "?";
}

namespace {

// Every handle type's name, by its value: the two that belong to no device API, then those the
// backends registered, in the order they did. A deque, so a name's storage never moves once
// handed out.
struct NativeTypes {
  std::mutex mutex;
  std::deque<std::string> names{"none", "host_ptr"};
};

NativeTypes& native_types() {
  static NativeTypes types;
  return types;
}

}  // namespace

std::string_view native_type_name(NativeType type) noexcept {
  NativeTypes& types = native_types();
  const std::lock_guard lock(types.mutex);
  const auto index = static_cast<std::size_t>(type);
  return index < types.names.size() ? std::string_view(types.names[index]) : std::string_view("?");
}

NativeType register_native_type(std::string_view name) {
  if (name.empty()) fail(ErrorCode::usage, "register_native_type: the name is empty");
  NativeTypes& types = native_types();
  const std::lock_guard lock(types.mutex);
  for (std::size_t i = 0; i < types.names.size(); ++i)
    if (types.names[i] == name) return static_cast<NativeType>(i);
  if (types.names.size() > std::numeric_limits<std::underlying_type_t<NativeType>>::max())
    fail(ErrorCode::usage, "register_native_type: no room for '", name, "' (", types.names.size(), " types)");
  types.names.emplace_back(name);
  return static_cast<NativeType>(types.names.size() - 1);
}

namespace {

// Registration's one check: the hooks lwload calls are those the backend was built with.
void check_interface_version(const Backend& backend) {
  if (backend.interface_version() != LWLOAD_BACKEND_INTERFACE_VERSION)
    fail(ErrorCode::usage, "backend '", backend.name(), "' was built against backend interface version ",
         backend.interface_version(), "; this lwload implements version ", LWLOAD_BACKEND_INTERFACE_VERSION,
         " (rebuild it against this lwload's lwload/backend_impl.hpp)");
}

}  // namespace

BackendRegistry::BackendRegistry(std::vector<std::shared_ptr<Backend>> builtin) : backends_(std::move(builtin)) {
  for (const auto& backend : backends_) check_interface_version(*backend);
}

void BackendRegistry::add(std::shared_ptr<Backend> backend) {
  if (!backend) fail(ErrorCode::usage, "BackendRegistry::add: no backend");
  check_interface_version(*backend);
  const std::lock_guard lock(mutex_);
  std::erase_if(backends_, [&](const auto& b) { return b->name() == backend->name(); });
  backends_.push_back(std::move(backend));
}

std::shared_ptr<Backend> BackendRegistry::find(std::string_view name) const {
  const std::lock_guard lock(mutex_);
  for (const auto& b : backends_)
    if (b->name() == name) return b;
  return nullptr;
}

std::vector<std::shared_ptr<Backend>> BackendRegistry::backends() const {
  const std::lock_guard lock(mutex_);
  return backends_;
}

std::vector<DeviceInfo> list_devices() {
  std::vector<DeviceInfo> all;
  for (const auto& backend : BackendRegistry::instance().backends()) {
    auto devices = backend->devices();
    all.insert(all.end(), devices.begin(), devices.end());
  }
  return all;
}

namespace {

// Higher is better for `--device auto`: what lwload exists for first (unified GPUs/NPUs that
// import), then any accelerator, then the CPU itself. The null device is never chosen.
int auto_rank(const DeviceInfo& d) {
  if (d.backend == "null") return -1;
  const bool accelerator = d.kind != DeviceKind::cpu;
  if (accelerator && d.memory == MemoryModel::unified && d.caps.import_host_ptr) return 4;
  if (accelerator && d.memory == MemoryModel::unified) return 3;
  if (accelerator) return 2;
  if (d.backend == "host") return 1;
  return 0;
}

}  // namespace

std::unique_ptr<Device> open_device(std::string_view spec, const DeviceOverrides& overrides) {
  auto& registry = BackendRegistry::instance();
  if (spec.empty() || spec == "auto") {
    const DeviceInfo* best = nullptr;
    const auto devices = list_devices();
    for (const auto& d : devices)
      if (auto_rank(d) >= 0 && (!best || auto_rank(d) > auto_rank(*best))) best = &d;
    if (!best) fail(ErrorCode::device, "no device found for --device auto");
    return registry.find(best->backend)->open(best->index, overrides);
  }
  const auto colon = spec.find(':');
  const std::string_view name = spec.substr(0, colon);
  std::uint32_t index = 0;
  if (colon != std::string_view::npos) {
    const std::string_view digits = spec.substr(colon + 1);
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    if (ec != std::errc{} || end != digits.data() + digits.size() || digits.empty())
      fail(ErrorCode::usage, "device '", spec, "': expected BACKEND[:INDEX], e.g. opencl:0");
  }
  const auto backend = registry.find(name);
  if (!backend) {
    std::string known;
    for (const auto& b : registry.backends()) known += str(known.empty() ? "" : ", ", b->name());
    fail(ErrorCode::usage, "unknown backend '", name, "' (available: ", known, ")");
  }
  const auto devices = backend->devices();
  if (index >= devices.size())
    fail(ErrorCode::usage, "device '", spec, "': backend '", name, "' has ", devices.size(), " device(s)");
  return backend->open(index, overrides);
}

}  // namespace lwload
