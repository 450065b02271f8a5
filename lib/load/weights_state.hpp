// What a Weights object owns. Members are destroyed in reverse order: handles, then device buffers
// (allocations and imports), then the file mappings those imports use — the order DESIGN.md's
// "mappings outlive the buffers that use them" needs.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "io/mapped_region.hpp"
#include "lwload/loader.hpp"

namespace lwload {

struct Weights::State {
  Manifest manifest;
  Plan plan;
  DeviceInfo device;
  std::shared_ptr<FileSystem> file_system;
  IoEngine engine = IoEngine::pread;
  std::string engine_note;
  LoadStats stats;

  std::vector<std::shared_ptr<MappedRegion>> mappings;  // destroyed last
  std::vector<std::unique_ptr<DeviceBuffer>> buffers;   // imports and allocations
  std::vector<TensorHandle> handles;                    // Plan::tensors order
  std::unordered_map<std::string_view, std::size_t> by_name;  // views into manifest names
};

}  // namespace lwload
