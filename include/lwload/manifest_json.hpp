// The manifest as the JSON object `lwload inspect --json` prints (docs/ARCHITECTURE.md, "Manifest").
#pragma once

#include <ostream>
#include <string>

#include "lwload/manifest.hpp"
#include "lwload/export.h"

namespace lwload {

// {"format", "files", "total_bytes", "tensors": [{"name", "dtype", "shape", "bytes", "pieces",
// "quantization"[, "encoding"]...}], "quantizations": [...], "metadata": {...}}. A tensor's
// "quantization" is null or an index into "quantizations", which lists each record once however
// many tensors share it. Metadata is included only when asked for (GGUF vocabularies are large).
// Strings are written as valid UTF-8 (a byte that begins no well-formed sequence is \ufffd).
LWLOAD_API std::string manifest_to_json(const Manifest& manifest, bool with_metadata = false);
// The same, written to `out` in 64 KiB pieces (memory independent of the tensors and metadata).
LWLOAD_API void write_manifest_json(std::ostream& out, const Manifest& manifest, bool with_metadata = false);

}  // namespace lwload
