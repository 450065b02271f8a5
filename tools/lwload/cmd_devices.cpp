// lwload devices: every backend's devices and the facts the planner uses.
#include <iostream>

#include <boost/json.hpp>

#include "cli.hpp"
#include "lwload/backend.hpp"

namespace lwload::cli {

int cmd_devices(int argc, char** argv) {
  Args args("devices", "Lists the devices of every backend with the capabilities placements depend on.", {},
            {{"--json", "", "print a JSON array", ""}});
  if (!args.parse(argc, argv)) return exit_ok;
  const auto devices = list_devices();
  if (args.flag("--json")) {
    boost::json::array out;
    for (const auto& d : devices) {
      boost::json::object details;
      for (const auto& [k, v] : d.details) details[k] = v;
      out.push_back(boost::json::object{{"id", d.id()},
                                        {"name", d.name},
                                        {"kind", device_kind_name(d.kind)},
                                        {"memory", memory_model_name(d.memory)},
                                        {"import_host_ptr", d.caps.import_host_ptr},
                                        {"import_pins", pinning_name(d.caps.import_pins)},
                                        {"import_alignment", d.caps.import_alignment},
                                        {"size_multiple", d.caps.size_multiple},
                                        {"max_alloc", d.caps.max_alloc},
                                        {"sub_buffer_alignment", d.caps.sub_buffer_alignment},
                                        {"host_visible_alloc", d.caps.host_visible_alloc},
                                        {"pinned_staging", d.caps.pinned_staging},
                                        {"device_memory", d.caps.device_memory},
                                        {"memory_available", d.caps.memory_available},
                                        {"import_limit", d.caps.import_limit},
                                        {"details", details}});
    }
    std::cout << valid_utf8_json(boost::json::serialize(out)) << '\n';
    return exit_ok;
  }
  for (const auto& d : devices) {
    std::cout << d.id() << "  " << d.name << "\n    kind " << device_kind_name(d.kind) << ", memory "
              << memory_model_name(d.memory) << ", zero-copy import " << (d.caps.import_host_ptr ? "yes" : "no");
    if (d.caps.import_host_ptr)
      std::cout << " (align " << d.caps.import_alignment << ", size multiple " << d.caps.size_multiple << ", pins "
                << pinning_name(d.caps.import_pins) << ")";
    std::cout << "\n    max allocation " << format_bytes(d.caps.max_alloc) << ", device memory "
              << (d.caps.device_memory ? format_bytes(d.caps.device_memory) : "unknown") << ", free "
              << (d.caps.memory_available ? format_bytes(d.caps.memory_available) : "unknown");
    if (d.caps.import_limit) std::cout << ", imports at most " << format_bytes(d.caps.import_limit);
    std::cout << ", sub-buffer alignment " << d.caps.sub_buffer_alignment << '\n';
    for (const auto& [k, v] : d.details) std::cout << "    " << k << ": " << v << '\n';
  }
  if (devices.empty()) std::cout << "no devices\n";
  // Backends built in but with nothing to show say why, so "no CUDA device" is never a mystery.
  for (const auto& backend : BackendRegistry::instance().backends())
    if (const std::string why = backend->absent_reason(); !why.empty())
      std::cout << backend->name() << ": no device: " << why << '\n';
  return exit_ok;
}

}  // namespace lwload::cli
