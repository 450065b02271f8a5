// Where the session's weightless graph says a handed-over constant's bytes are. ONNX Runtime checks
// that the file an initializer's external_data names exists even when AddInitializer supersedes
// it, and its graph optimizers read some initializers' values (a Mul's scalar, a Reshape's shape)
// from that file, not from the added OrtValue. So the reference must be true: the model's own file
// at the tensor's own offset, reached through the folder ONNX Runtime resolves external data in.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lwload/manifest.hpp"

namespace lwload::onnxruntime {

struct FileReferences {
  // The session's "session.model_external_initializers_file_folder_path".
  std::string folder;
  // Per Manifest::files entry: its path relative to `folder`; empty where the file cannot be
  // reached by path (a model in memory).
  std::vector<std::string> location;
  // The model is in memory: `folder` is /proc/self, and a constant's location is "mem" at its
  // address — true, but a file of size 0 to ONNX Runtime, which refuses to read it.
  bool in_memory = false;
};

// The references for the files `manifest` opened: each file's path as the kernel knows its open
// descriptor (/proc/self/fd), kept only when that path still names the same file.
FileReferences file_references(const Manifest& manifest);

// Fails with Error(io) naming the file when a path of `refs` no longer names the file `manifest`
// opened (replaced while the session was made: ONNX Runtime may have read another file's bytes).
void check_unchanged(const FileReferences& refs, const Manifest& manifest);

}  // namespace lwload::onnxruntime
