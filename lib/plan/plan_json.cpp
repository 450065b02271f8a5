// Plan → JSON with Boost.JSON (`lwload plan --json`, profile reports).
#include <boost/json.hpp>

#include "lwload/plan.hpp"

namespace lwload {

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
  boost::json::object counts;
  for (Placement p : {Placement::zero_copy, Placement::direct, Placement::staged, Placement::skipped})
    counts[placement_name(p)] = plan.count(p);
  root["counts"] = std::move(counts);

  boost::json::array regions;
  for (const auto& r : plan.regions) {
    boost::json::array names;
    for (std::size_t index : r.tensors) names.emplace_back(manifest.tensors.at(index).name);
    regions.push_back(boost::json::object{{"file", r.file},
                                          {"offset", r.offset},
                                          {"length", r.length},
                                          {"used", r.used},
                                          {"tensors", std::move(names)}});
  }
  root["regions"] = std::move(regions);

  boost::json::array tensors;
  tensors.reserve(plan.tensors.size());
  for (const auto& tp : plan.tensors) {
    const TensorInfo& t = manifest.tensors.at(tp.tensor);
    boost::json::object obj{{"name", t.name},
                            {"bytes", t.bytes},
                            {"placement", placement_name(tp.placement)},
                            {"reason", tp.reason}};
    obj["region"] = tp.region == no_region ? boost::json::value(nullptr) : boost::json::value(tp.region);
    obj["region_offset"] = tp.region_offset;
    tensors.push_back(std::move(obj));
  }
  root["tensors"] = std::move(tensors);
  return boost::json::serialize(root);
}

}  // namespace lwload
