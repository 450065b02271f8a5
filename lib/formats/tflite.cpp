// tflite reader: not implemented yet (placeholder so the build links).
#include "formats/format.hpp"
#include "lwload/error.hpp"

namespace lwload::formats {
namespace {
bool detect(const ModelSource&) { return false; }
Manifest read(const ModelSource& source) {
  fail(ErrorCode::unsupported, source.path.string(), ": the tflite reader is not implemented yet");
}
}  // namespace

const FormatReader tflite_reader{"tflite", detect, read};

}  // namespace lwload::formats
