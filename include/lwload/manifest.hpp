// The format-neutral manifest: which bytes of which file hold which tensor. Built from headers
// alone (no tensor data is read), so an engine can build its graph before any weight moves.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "lwload/dtype.hpp"
#include "lwload/export.h"
#include "lwload/file_system.hpp"
#include "lwload/inline_vector.hpp"

namespace lwload {

// A contiguous byte range of one of the manifest's files. Offsets are absolute in that file.
struct Piece {
  std::uint32_t file = 0;  // index into Manifest::files
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
};

// How a tensor's bytes are stored when they are not its raw little-endian elements.
enum class Encoding : std::uint8_t {
  raw,          // `pieces` concatenated are the tensor's bytes
  onnx_varint,  // ONNX int32_data/int64_data/uint64_data: `pieces` are whole tagged protobuf
                // fields (packed or not) holding one varint per element
  onnx_fixed,   // ONNX float_data/double_data written unpacked: `pieces` are tagged fields of one
                // fixed32/fixed64 element each
  sparse,       // a sparse tensor densified (OpenOptions::densify): `pieces` are its stored values,
                // `sparsity` says where each goes in the dense `shape`; elements not stored are 0
  strided,      // elements not in row-major order in the file (a saved transpose, a Fortran-ordered
                // array): `pieces` span them, `strides` says where each is (element (i0, i1, ...)
                // at element sum(ik × strides[k]) of the span); loaded row-major, copied on the host
};
LWLOAD_API std::string_view encoding_name(Encoding encoding) noexcept;

// Quantization parameters a format stores beside the data (GGUF block types need none: the dtype
// says it all). Scales and zero points are per tensor (one value) or per channel along `axis`.
struct Quantization {
  std::string scheme;  // "tfjs" (affine uint8/uint16 or float16), "tflite" (affine)
  std::vector<double> scale;
  std::vector<std::int64_t> zero_point;
  std::optional<double> min;  // TFJS stores min instead of a zero point
  std::optional<DType> original_dtype;
  std::int32_t axis = 0;
};

// How a tensor stored sparse (TFLite/Circle SparsityParameters) maps its stored values into the
// dense tensor `shape`. Levels are listed in traversal order: first the tensor's own dimensions
// (traversal_order[i] < rank), then its block dimensions (rank + j blocks dimension block_map[j]).
// Each level is dense (every coordinate below `size`) or CSR (for each position of the level
// above, the coordinates indices[segments[p] .. segments[p + 1]]). The stored values are the
// leaves of that walk, in order. A reader checks the structure when it opens the model.
struct Sparsity {
  struct Level {
    bool sparse = false;     // SPARSE_CSR; otherwise DENSE
    std::uint32_t size = 0;  // coordinates of this level (a block dimension: the block size)
    std::vector<std::uint32_t> segments;
    std::vector<std::uint32_t> indices;
  };
  std::vector<std::int32_t> traversal_order;
  std::vector<std::int32_t> block_map;
  std::vector<Level> levels;
  std::uint64_t stored_values = 0;  // elements in the stored bytes
  std::uint64_t dense_bytes = 0;    // bytes of the dense tensor
};

struct MetaValue;

// An array of numbers (or booleans) of one type, held as the file stores them: a GGUF array of
// 8 million UINT8 costs 8 MB here, where a MetaValue per element would cost 40 bytes each.
struct LWLOAD_API PackedArray {
  enum class Type : std::uint8_t { u8, i8, u16, i16, u32, i32, u64, i64, f32, f64, boolean };
  Type type = Type::u8;
  std::vector<std::byte> bytes;  // the elements, little-endian, element_size(type) bytes each

  static std::size_t element_size(Type type) noexcept;
  std::size_t size() const noexcept { return bytes.size() / element_size(type); }
  bool empty() const noexcept { return bytes.empty(); }
  // Element i as a scalar MetaValue: u* as std::uint64_t, i* as std::int64_t, f* as double,
  // boolean as bool (any non-zero byte is true). i < size().
  MetaValue operator[](std::size_t i) const;
};

// Model-level metadata value (GGUF KVs incl. arrays, safetensors __metadata__, ONNX producer
// and opsets, TFLite description). GGUF arrays of numbers or booleans are `Packed`; arrays of
// strings, and every other format's arrays, are `Array`.
struct MetaValue {
  using Array = std::vector<MetaValue>;
  using Packed = PackedArray;
  std::variant<std::monostate, bool, std::int64_t, std::uint64_t, double, std::string, Array, Packed> value;
};

struct MetaEntry {
  std::string key;
  MetaValue value;
};

// The dimensions of a tensor, in the format's own order; up to 4 kept in the record.
using Shape = InlineVector<std::int64_t, 4>;
// A tensor's pieces; one (almost every tensor's) kept in the record.
using Pieces = InlineVector<Piece, 1>;

// A header may list millions of tensors, so the record is kept small (184 bytes, no heap block
// for a tensor of rank 4 or less, in one piece, named in 15 bytes or less): what most tensors lack
// is a pointer to something shared and immutable, not an inline optional field.
struct TensorInfo {
  std::string name;
  DType dtype = DType::F32;
  Encoding encoding = Encoding::raw;  // beside dtype: the two bytes share one 8-byte slot
  Shape shape;                        // the format's own order (GGUF: ne0 first)
  std::uint64_t bytes = 0;            // bytes of the stored tensor (what lands on the device)
  Pieces pieces;                      // raw: the bytes; otherwise the encoded field(s) to decode
  // Shared and immutable: most tensors have none (a pointer, not ~120 bytes of optional fields).
  std::shared_ptr<const Quantization> quantization;
  // Where in the model the tensor came from, when the format keeps constants in more than one kind
  // of place (ONNX: "Constant node 'c' in ..."); null for a format's ordinary tensors.
  std::shared_ptr<const std::string> origin = {};
  // Set when the format stores the tensor sparse: without OpenOptions::densify, `bytes` and
  // `pieces` are the stored values only (not dtype x shape) and the device gets those.
  std::shared_ptr<const Sparsity> sparsity = {};
  // Encoding::strided: one stride per dimension, in elements, none negative, no two elements at
  // one place.
  std::shared_ptr<const std::vector<std::int64_t>> strides = {};
};

// A file open_manifest read, kept open with what it was then.
struct OpenedFile {
  std::shared_ptr<const RandomAccessFile> file;
  FileIdentity identity;  // when its headers were read
  // Where the manifest file's bytes start in `file`: 0, except for a model inside a larger file
  // (open_manifest_fd), where `file` is the containing file and pieces' offsets count in it.
  std::uint64_t offset = 0;
};

struct LWLOAD_API Manifest {
  std::string format;                        // "safetensors", "gguf", "onnx", "tflite", "circle", "tfjs", "pytorch"
  std::vector<std::filesystem::path> files;  // as opened (relative if the input path was)
  std::vector<TensorInfo> tensors;           // in file order
  std::vector<MetaEntry> metadata;
  // How load() and verify() reach `files`. open_manifest sets both: the file system it read through
  // (the model folder's containment rule included) and, per `files` entry, the file as it opened
  // it, kept open. A path re-linked or replaced afterwards changes nothing (these very files are
  // read), and a file rewritten in place (its size or modification time) is Error(io) before its
  // bytes are trusted. A manifest built by hand may leave `opened` empty: load() then opens `files`
  // by path through `file_system` (nullptr: the POSIX file system).
  std::shared_ptr<FileSystem> file_system;
  std::vector<OpenedFile> opened;

  std::uint64_t total_bytes() const noexcept;
  std::uint64_t largest_tensor_bytes() const noexcept;
  const TensorInfo* find(std::string_view name) const noexcept;
};

// Bytes of an open file: the `length` bytes at `offset` of `fd` (lwload duplicates fd).
struct FileRange {
  int fd = -1;
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
};

struct OpenOptions {
  // File access seam; nullptr means the POSIX file system.
  std::shared_ptr<FileSystem> file_system;
  // Force a reader instead of detecting the format from content ("safetensors", "gguf", ...).
  std::string format;
  // Every file a model names must resolve, links followed, inside the model's folder; true lets
  // links point elsewhere (weights linked from a shared cache, e.g. Hugging Face hub snapshots).
  bool allow_outside_links = false;
  // Sparse tensors (TFLite/Circle) are loaded densified: Encoding::sparse, `bytes` the dense
  // tensor's, expanded on the host at load time (TFLite's Densify). Off: the stored values.
  bool densify = false;
  // Caps on what headers may ask for, over the whole model (all shards / parts): a header past
  // either is refused with Error(bad_input) naming the file and field before its records are kept.
  std::uint64_t max_tensors = std::uint64_t{1} << 22;     // real models have at most ~10^5
  std::uint64_t max_name_bytes = std::uint64_t{1} << 28;  // 256 MiB: 2^22 names of 64 bytes
  // For a model opened from a descriptor (open_manifest_fd): where a file it names lives (a
  // safetensors shard or its index, ONNX external data, a TFJS shard), given the name as the model
  // writes it; std::nullopt: no such file. Unset: a model that names another file is refused.
  std::function<std::optional<FileRange>(const std::filesystem::path& name)> resolve = {};
};

// Reads the headers of the model at `path` (a file, or a folder holding one model) and returns its
// manifest. Throws Error(bad_input) naming the file, tensor and field when the headers are invalid.
LWLOAD_API Manifest open_manifest(const std::filesystem::path& path, const OpenOptions& options = {});

// The model is the `length` bytes at `offset` of the open file `fd`: an asset stored uncompressed
// inside an APK (AAsset_openFileDescriptor64 gives the fd, the start and the length), a model
// appended to an executable. lwload duplicates fd (the caller may close its own) and reads nothing
// outside those bytes. Pieces' offsets count in the containing file (the model's first byte is at
// `offset`), so zero-copy placements work at any offset: their regions cover whole pages of the
// containing file, as for any file. A file the model names (a shard, external data) is found
// through options.resolve, the same way; without it the model must be one file (another file it
// names is an error naming that file).
// options.file_system is not used. Messages name the model "fd N [offset, +length]".
LWLOAD_API Manifest open_manifest_fd(int fd, std::uint64_t offset, std::uint64_t length,
                                     const OpenOptions& options = {});

// The model is `bytes`, in the caller's memory (a model just downloaded, or embedded). Nothing is
// copied: reads copy out of `bytes`, and zero-copy placements (the host device) hand out pointers
// into them. The caller keeps `bytes` alive and unchanged as long as this manifest, any copy of it
// and every Weights loaded from it live. One file, as for open_manifest_fd.
LWLOAD_API Manifest open_manifest_memory(std::span<const std::byte> bytes, const OpenOptions& options = {});

// The names of the formats lwload reads, in detection order.
LWLOAD_API std::vector<std::string> supported_formats();

}  // namespace lwload
