// Plan → JSON (`lwload plan --json`, profile reports): the figures through Boost.JSON, the regions
// and tensors as text (core/json_text.hpp) — a plan may hold a million tensors, and a DOM of them
// took 1.2 GB. The bytes are what serialising one Boost.JSON object of it would give.
#include <boost/json.hpp>

#include "core/json_text.hpp"
#include "lwload/plan.hpp"

namespace lwload {

using json_text::append_json_string;
using json_text::append_member;
using json_text::append_number;

std::string plan_to_json(const Plan& plan, const Manifest& manifest) {
  boost::json::object root;
  root["device"] = plan.device;
  root["memory"] = memory_model_name(plan.memory);
  root["model_bytes"] = plan.model_bytes;
  root["largest_tensor"] = plan.largest_tensor;
  root["mapped_bytes"] = plan.mapped_bytes;
  root["device_bytes"] = plan.device_bytes;
  root["staging"] = boost::json::object{
      {"budget", plan.staging_budget}, {"slots", plan.staging_slots}, {"slot_bytes", plan.slot_bytes}};
  root["decode_bytes"] = plan.decode_bytes;
  root["predicted_host_peak"] = plan.predicted_host_peak;
  {
    const HostMemory& h = plan.host;
    const MachineMemory& m = h.machine;
    boost::json::object host{{"pinned", h.pinned},
                             {"pinned_imports", h.pinned_imports},
                             {"device_allocations", h.device_allocations},
                             {"evictable", h.evictable},
                             {"anonymous", h.anonymous},
                             {"resident", h.resident},
                             {"address_space", h.address_space},
                             {"lazy", h.lazy},
                             {"resident_at_ready", h.resident_at_ready},
                             {"available", m.host_available()},
                             {"bound_by", m.host_bound_by()},
                             {"mem_available", m.mem_available},
                             {"cgroup_limit", m.cgroup_limit},
                             {"cgroup", m.cgroup},
                             {"verdict", h.verdict}};
    if (m.address_space_limit != 0) host["address_space_left"] = m.address_space_left();
    else host["address_space_left"] = nullptr;
    root["host_memory"] = std::move(host);
  }
  boost::json::object counts;
  for (Placement p : {Placement::zero_copy, Placement::direct, Placement::staged, Placement::skipped})
    counts[placement_name(p)] = plan.count(p);
  root["counts"] = std::move(counts);
  boost::json::array residency;
  for (const FileResidency& r : plan.residency)
    residency.push_back(r.known
                            ? boost::json::value(boost::json::object{
                                  {"span", r.span}, {"cached", r.cached}, {"exact", r.exact}, {"samples", r.samples}})
                            : boost::json::value(nullptr));
  root["page_cache"] = std::move(residency);
  root["direct_io"] = boost::json::object{{"used", plan.direct_io}, {"reason", plan.direct_io_reason}};
  boost::json::array queues;
  for (const auto& queue : plan.schedule.queues) queues.push_back(queue.size());
  root["schedule"] = boost::json::object{{"engine", io_engine_name(plan.schedule.engine)},
                                         {"engine_reason", plan.schedule.engine_reason},
                                         {"reads", plan.schedule.reads()},
                                         {"queues", std::move(queues)}};

  std::string out = boost::json::serialize(root);
  out.pop_back();  // the closing brace: regions and tensors follow
  out += ",\"regions\":[";
  for (std::size_t r = 0; r < plan.regions.size(); ++r) {
    const ImportRegion& region = plan.regions[r];
    out += r ? ",{\"file\":" : "{\"file\":";
    append_number(out, region.file);
    append_member(out, "offset", region.offset);
    append_member(out, "length", region.length);
    append_member(out, "used", region.used);
    append_member(out, "map_offset", region.map_offset);
    append_member(out, "map_length", region.map_length);
    append_member(out, "cached", region.cached);
    if (!region.imported()) append_member(out, "declined", std::string_view(region.declined));
    out += ",\"tensors\":[";
    for (std::size_t i = 0; i < region.tensors.size(); ++i) {
      if (i) out += ',';
      append_json_string(out, manifest.tensors.at(region.tensors[i]).name);
    }
    out += "]}";
  }
  out += "],\"tensors\":[";
  for (std::size_t i = 0; i < plan.tensors.size(); ++i) {
    const TensorPlan& tp = plan.tensors[i];
    const TensorInfo& t = manifest.tensors.at(i);
    out += i ? ",{\"name\":" : "{\"name\":";
    append_json_string(out, t.name);
    append_member(out, "bytes", t.bytes);
    append_member(out, "placement", placement_name(tp.placement));
    append_member(out, "reason", std::string_view(tp.reason));
    out += ",\"region\":";
    if (tp.region == no_region) out += "null";
    else append_number(out, tp.region);
    append_member(out, "region_offset", tp.region_offset);
    out += '}';
  }
  out += "]}";
  return out;
}

}  // namespace lwload
