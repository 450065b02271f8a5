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
// Only the tables are read: a snapshot of the file without its large Buffer.data payloads (found by
// a bounds-checked pre-walk of Model.buffers) is read with pread into anonymous memory, and the
// FlatBuffers Verifier and the walk run on it. A table, vector or string that lies inside a
// payload left out would read as zeros there, so such a file is refused (tflite_tables.cpp): what
// lwload reports is always what flatc reads. Nothing maps the file, so a file truncated while
// it is inspected is an error, never a SIGBUS.
#include <flatbuffers/flatbuffers.h>

#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "formats/tflite/tflite.hpp"
#include "formats/header_reader.hpp"
#include "formats/tflite/tflite_model.hpp"
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

// Buffer.data payloads at least this large are not read: a model's weights are in them, and the
// reader needs only their offsets and lengths. Smaller ones (Model.metadata text) are read.
constexpr std::uint64_t kSkippedPayload = kUnreadPayload;

// A little-endian scalar at `offset` of the file, or nullopt past `limit` (the pre-walk below must
// survive any bytes: what it finds only decides what is skipped; the Verifier judges the copy).
// `walked` grows to the end of the furthest bytes read.
template <typename T>
std::optional<T> scalar_at(const RandomAccessFile& file, std::uint64_t offset, std::uint64_t limit,
                           std::uint64_t* walked = nullptr) {
  if (offset > limit || sizeof(T) > limit - offset) return std::nullopt;
  std::array<std::byte, sizeof(T)> bytes;
  file.read_exact(offset, bytes, "flatbuffer table");
  if (walked) *walked = std::max(*walked, offset + sizeof(T));
  return load_le<T>(bytes.data());
}

// Where field `id` of the table at `table` is stored, or nullopt when absent or out of bounds.
std::optional<std::uint64_t> field_at(const RandomAccessFile& file, std::uint64_t table, unsigned id,
                                      std::uint64_t limit) {
  const auto vtable_delta = scalar_at<std::int32_t>(file, table, limit);
  if (!vtable_delta) return std::nullopt;
  const std::int64_t vtable = static_cast<std::int64_t>(table) - *vtable_delta;
  if (vtable < 0) return std::nullopt;
  const auto vtable_size = scalar_at<std::uint16_t>(file, static_cast<std::uint64_t>(vtable), limit);
  const std::uint64_t entry = 4 + 2 * std::uint64_t{id};
  if (!vtable_size || *vtable_size < entry + 2) return std::nullopt;
  const auto field = scalar_at<std::uint16_t>(file, static_cast<std::uint64_t>(vtable) + entry, limit);
  if (!field || *field == 0) return std::nullopt;
  return table + *field;
}

// Where an offset field (a uoffset relative to itself) points.
std::optional<std::uint64_t> field_target(const RandomAccessFile& file, std::uint64_t table, unsigned id,
                                          std::uint64_t limit) {
  const auto at = field_at(file, table, id, limit);
  const auto relative = at ? scalar_at<std::uint32_t>(file, *at, limit) : std::nullopt;
  if (!relative) return std::nullopt;
  return *at + *relative;
}

// What the snapshot leaves out: the large Buffer.data payloads (Model field 4 `buffers`, Buffer
// field 0 `data`; the same ids in TFLite and Circle), sorted, and everything from the first
// extended buffer's data on (Buffer fields 1 and 2, offset/size: data that follows the
// flatbuffer; an offset pointing into the tables the pre-walk read is the reader's error to
// report, so then nothing is cut). A few small reads per buffer.
struct Skipped {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> payloads;
  std::uint64_t tables_end;
};

Skipped skipped(const RandomAccessFile& file, std::uint64_t limit) {
  Skipped out{{}, limit};
  std::uint64_t walked = 0;
  std::uint64_t first_extended = limit;
  const auto root = scalar_at<std::uint32_t>(file, 0, limit);
  const auto buffers = root ? field_target(file, *root, 4, limit) : std::nullopt;
  const auto count = buffers ? scalar_at<std::uint32_t>(file, *buffers, limit) : std::nullopt;
  if (!count || *count > (limit - *buffers) / 4) return out;
  for (std::uint32_t i = 0; i < *count; ++i) {
    const std::uint64_t slot = *buffers + 4 + 4 * std::uint64_t{i};
    const auto relative = scalar_at<std::uint32_t>(file, slot, limit, &walked);
    if (!relative) break;
    const std::uint64_t table = slot + *relative;
    if (const auto offset_at = field_at(file, table, 1, limit)) {
      const auto offset = scalar_at<std::uint64_t>(file, *offset_at, limit, &walked);
      if (offset && *offset > 1) first_extended = std::min(first_extended, *offset);
    }
    const auto data = field_target(file, table, 0, limit);
    const auto length = data ? scalar_at<std::uint32_t>(file, *data, limit, &walked) : std::nullopt;
    if (!length || *length < kSkippedPayload || *length > limit - *data - 4) continue;
    out.payloads.emplace_back(*data + 4, *data + 4 + *length);
  }
  std::sort(out.payloads.begin(), out.payloads.end());
  out.tables_end = first_extended >= walked ? first_extended : limit;
  return out;
}

// The flatbuffer part of the file as a snapshot in anonymous memory: every byte except the large
// Buffer.data payloads, read with pread. The Verifier and the walk then never touch the file's
// pages, so a file truncated during inspect is a short read (Error) instead of a SIGBUS; and the
// weights are never read (the skipped payload pages stay untouched zero pages, costing no memory).
class FlatbufferBytes {
 public:
  FlatbufferBytes(const RandomAccessFile& file, std::uint64_t limit) {
    const Skipped skip = skipped(file, limit);
    length_ = std::max<std::uint64_t>(skip.tables_end, 8);  // the identifier is read from it, always
    void* p = ::mmap(nullptr, static_cast<std::size_t>(length_), PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
      fail(ErrorCode::io, file.path().string(), ": cannot reserve ", length_, " bytes for its flatbuffer tables");
    base_ = static_cast<std::byte*>(p);
    std::uint64_t at = 0;
    const auto read_to = [&](std::uint64_t end) {
      end = std::min(end, length_);
      if (end > at) file.read_exact(at, std::span(base_ + at, static_cast<std::size_t>(end - at)), "flatbuffer tables");
    };
    for (const auto& [begin, end] : skip.payloads) {
      if (begin < at) continue;  // overlapping payloads (shared or hostile): read what is not yet read
      read_to(begin);
      if (begin < length_ && end > begin) unread_.emplace_back(begin, std::min(end, length_));
      at = std::max(at, end);
    }
    read_to(length_);
  }
  ~FlatbufferBytes() { ::munmap(base_, static_cast<std::size_t>(length_)); }
  FlatbufferBytes(const FlatbufferBytes&) = delete;
  FlatbufferBytes& operator=(const FlatbufferBytes&) = delete;

  std::span<const std::byte> bytes() const noexcept { return {base_, static_cast<std::size_t>(length_)}; }
  std::span<const std::uint8_t> as_uint8() const noexcept {
    return {reinterpret_cast<const std::uint8_t*>(base_), static_cast<std::size_t>(length_)};
  }
  // What was left unread (zeros in the snapshot), sorted and disjoint.
  std::span<const std::pair<std::uint64_t, std::uint64_t>> unread() const noexcept { return unread_; }

 private:
  std::vector<std::pair<std::uint64_t, std::uint64_t>> unread_;
  std::uint64_t length_ = 0;
  std::byte* base_ = nullptr;
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
  return read_tflite_flatbuffer(TfliteInput{source, size, flatbuffer.as_uint8(), flatbuffer.unread()}, flavor);
}

}  // namespace

const FormatReader tflite_reader{"tflite", detect, read};

}  // namespace lwload::formats
