// A backend's device list as its discovery found it (a vector of records with a DeviceInfo
// `info`, in index order): the infos `devices()` answers, and the record `open(index)` opens.
#pragma once

#include "backends/layer.hpp"

#include <cstdint>
#include <string_view>
#include <vector>

#include "lwload/backend.hpp"
#include "lwload/error.hpp"

namespace lwload {

template <typename FoundDevice>
std::vector<DeviceInfo> infos_of(const std::vector<FoundDevice>& found) {
  std::vector<DeviceInfo> infos;
  for (const FoundDevice& f : found) infos.push_back(f.info);
  return infos;
}

// found[index]; past the end, a usage error: "<backend>:<index>: no such device (<n> <title>
// device(s) present)".
template <typename FoundDevice>
const FoundDevice& device_at(const std::vector<FoundDevice>& found, std::uint32_t index, std::string_view backend,
                             std::string_view title) {
  if (index >= found.size())
    fail(ErrorCode::usage, backend, ":", index, ": no such device (", found.size(), " ", title, " device",
         found.size() == 1 ? "" : "s", " present)");
  return found[index];
}

}  // namespace lwload
