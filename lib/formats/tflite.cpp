// TFLite ("TFL3") and Circle ("CIR0") reader: detection, and the read-only mapping of the
// flatbuffer that tflite_model.cpp walks. Manifest::format is "tflite" or "circle".
//
// What it reports:
//  - Every tensor, in every subgraph, whose buffer holds data: inline `Buffer.data` (a piece of the
//    model file at the vector's exact offset), extended `Buffer.offset/size` (schema 3c, files over
//    2 GiB: absolute offsets, valid when offset > 1, after the flatbuffer), or external buffers
//    (schema 3d: `Tensor.external_buffer` → `Model.external_buffers` → a group file named relative
//    to the model's folder). Tensors without data are omitted.
//  - Names: subgraph 0 keeps tensor names; subgraph i > 0 prefixes them with "subgraph<i>/".
//  - Quantization (scale, zero_point, quantized_dimension) as scheme "tflite".
//  - Metadata: "description", "version" (schema version), "subgraphs" (their names) and
//    "metadata.<name>" for Model.metadata entries (short text, or the buffer's size).
//  - Sparse tensors (SparsityParameters: CSR and dense levels, blocks) with their dense shape and
//    TensorInfo::sparsity: the stored values by default, the dense tensor with OpenOptions::densify.
//  - RESOURCE/VARIANT tensors with data, Circle's UINT4, sparse sub-byte tensors, Huffman-compressed
//    Circle tensors and packed external buffers are refused with Error(unsupported), not guessed at.
//
// Only the pages holding tables are touched: the file is mapped (MADV_RANDOM, no readahead) and
// the FlatBuffers Verifier checks bounds without reading vector payloads. A file system without
// descriptors (a test double) gets the flatbuffer part read into memory instead.
#include <flatbuffers/flatbuffers.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "formats/format.hpp"
#include "formats/tflite_model.hpp"
#include "lwload/error.hpp"

namespace lwload::formats {
namespace {

// The Verifier requires its buffer to be smaller than FLATBUFFERS_MAX_BUFFER_SIZE (2 GiB - 1); the
// flatbuffer itself always is (extended-buffer files put their data after it).
constexpr std::uint64_t kMaxFlatbufferBytes = FLATBUFFERS_MAX_BUFFER_SIZE - 1;

constexpr std::size_t kIdentifierOffset = 4;  // after the root table's uoffset
constexpr std::size_t kIdentifierLength = 4;

bool has_identifier(std::span<const std::byte> head, std::string_view identifier) {
  return head.size() >= kIdentifierOffset + kIdentifierLength &&
         std::memcmp(head.data() + kIdentifierOffset, identifier.data(), kIdentifierLength) == 0;
}

std::string printable(std::span<const std::byte> bytes) {
  std::string out;
  for (const std::byte b : bytes) {
    const auto c = static_cast<unsigned char>(b);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    }
  }
  return out;
}

// The flatbuffer part of the file: mapped read-only (without readahead: the verifier touches only
// table pages), or read into memory when the file cannot be mapped.
class FlatbufferBytes {
 public:
  FlatbufferBytes(const RandomAccessFile& file, std::uint64_t length) {
    if ((region_ = file.map(0, length, MapAccess::random))) {
      bytes_ = region_->bytes();
    } else {
      copy_.resize(static_cast<std::size_t>(length));
      file.read_exact(0, copy_, "flatbuffer");
      bytes_ = copy_;
    }
  }
  std::span<const std::byte> bytes() const noexcept { return bytes_; }
  std::span<const std::uint8_t> as_uint8() const noexcept {
    return {reinterpret_cast<const std::uint8_t*>(bytes_.data()), bytes_.size()};
  }

 private:
  std::shared_ptr<const FileMapping> region_;
  std::vector<std::byte> copy_;
  std::span<const std::byte> bytes_;
};

bool detect(const ModelSource& source) {
  if (source.is_directory) return false;
  if (has_identifier(source.head, "TFL3") || has_identifier(source.head, "CIR0")) return true;
  // Too short to carry an identifier: the extension decides, so the user hears why it is bad.
  const auto extension = source.path.extension();
  return source.head.size() < kIdentifierOffset + kIdentifierLength &&
         (extension == ".tflite" || extension == ".circle");
}

Manifest read(const ModelSource& source) {
  const auto file = source.fs.open(source.path);
  const std::uint64_t size = file->size();
  if (size < kIdentifierOffset + kIdentifierLength)
    fail(ErrorCode::bad_input, source.path.string(), ": ", size,
         " bytes is too short for a TFLite/Circle flatbuffer (root offset and file identifier need 8)");
  const FlatbufferBytes flatbuffer(*file, std::min(size, kMaxFlatbufferBytes));
  const auto bytes = flatbuffer.bytes();
  TfliteFlavor flavor;
  if (has_identifier(bytes, "TFL3")) {
    flavor = TfliteFlavor::tflite;
  } else if (has_identifier(bytes, "CIR0")) {
    flavor = TfliteFlavor::circle;
  } else {
    fail(ErrorCode::bad_input, source.path.string(), ": field file_identifier (bytes 4-7): '",
         printable(bytes.subspan(kIdentifierOffset, kIdentifierLength)),
         "' is neither TFL3 (TFLite) nor CIR0 (Circle)");
  }
  return read_tflite_flatbuffer(TfliteInput{source, size, flatbuffer.as_uint8()}, flavor);
}

}  // namespace

const FormatReader tflite_reader{"tflite", detect, read};

}  // namespace lwload::formats
