// What a Weights object owns. Members are destroyed in reverse order: handles, views, then device
// buffers (allocations and imports), then the file mappings those imports use — the order docs/ARCHITECTURE.md's
// "mappings outlive the buffers that use them" needs.
#pragma once

#include "loading/layer.hpp"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "loading/name_index.hpp"
#include "lwload/loader.hpp"

namespace lwload {

// Per manifest file, the file a load reads (null when it reads nothing from it).
using OpenFiles = std::vector<std::shared_ptr<const RandomAccessFile>>;

struct Weights::State {
  Manifest manifest;
  Plan plan;
  DeviceInfo device;
  std::shared_ptr<FileSystem> file_system;
  IoReport io;
  LoadStats stats;
  std::vector<FileIdentity> identities;  // per manifest file
  OpenFiles files;                       // what verify() reads too: the files loaded from

  std::vector<std::shared_ptr<const FileMapping>> mappings;  // destroyed last
  std::vector<std::unique_ptr<DeviceBuffer>> buffers;        // imports and allocations
  std::vector<std::unique_ptr<DeviceBuffer>> views;          // of region buffers: destroyed first
  std::vector<TensorHandle> handles;                         // Plan::tensors order
  loading::NameIndex by_name;                                // handle positions by their manifest names
};

}  // namespace lwload
