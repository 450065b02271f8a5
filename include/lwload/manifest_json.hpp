// The manifest as the JSON object `lwload inspect --json` prints (docs/ARCHITECTURE.md, "Manifest").
#pragma once

#include <ostream>
#include <string>

#include "lwload/manifest.hpp"
#include "lwload/export.h"

namespace lwload {

// {"format", "files", "total_bytes", "tensors": [{"name", "dtype", "shape", "bytes", "pieces",
// "quantization"[, "encoding"]}], "metadata": {...}}. Metadata is included only when asked for
// (GGUF vocabularies are large).
LWLOAD_API std::string manifest_to_json(const Manifest& manifest, bool with_metadata = false);
// The same, written to `out` one tensor at a time (memory independent of the tensor count).
LWLOAD_API void write_manifest_json(std::ostream& out, const Manifest& manifest, bool with_metadata = false);

}  // namespace lwload
