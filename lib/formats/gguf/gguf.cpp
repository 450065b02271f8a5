// GGUF reader (versions 2 and 3; little-endian): magic, version, tensor and KV counts, typed
// key/values (arrays of scalars or strings) into Manifest::metadata, then the tensor infos, whose data
// offsets are relative to the data section that starts at the end of the header rounded up to
// `general.alignment`. Everything is read through HeaderReader, so no tensor byte is fetched.
//
// The reference is ggml's own reader (gguf_init_from_file, ggml/src/gguf.cpp): what it refuses,
// lwload refuses, naming the tensor and ggml's rule, so no file loads here that llama.cpp cannot open.
// - Tensor names are below 64 bytes (GGML_MAX_NAME holds the NUL) and hold no NUL byte: ggml
//   refuses a longer name, and reads one with a NUL as the C string before it (another name).
// - n_dims is 0 (a scalar, one element) up to 4 (GGML_MAX_DIMS); the element count is below
//   INT64_MAX, by ggml's own test; ne0 is a whole number of blocks for block-quantized types. A
//   shape holding a 0 has no elements whatever its other dimensions (ggml skips its count test),
//   so [2^40, 2^40, 0] is an empty tensor, not an overflow.
// - Tensors lie in info order, packed: each starts where the one before it ends, rounded up to the
//   alignment (ggml refuses any other offset), so they cannot overlap.
// - `general.alignment` is a UINT32 (ggml and gguf-py refuse any other type), a non-zero power of
//   two. Duplicate KV keys and empty keys are rejected.
// - BOOL values other than 0/1 read as true, as llama.cpp reads them.
// - An array's elements are scalars or strings: ggml refuses an array of arrays ("invalid GGUF
//   type"), though gguf-py writes and reads them. A string is at most 1 GiB
//   (GGUF_MAX_STRING_LENGTH): ggml refuses a longer one even when the file holds its bytes.
// - Header limits protect memory from absurd but self-consistent files: every count is first checked
//   against the bytes left in the file (so 2^60 tensors fail before anything is allocated), and a
//   model may hold at most OpenOptions::max_tensors tensors (2^22) and max_name_bytes of names (all
//   parts of a split model together), a header kMaxMetaValues metadata values (keys and strings;
//   arrays of numbers are kept as the file's bytes and not counted).
// - A file with split.count is one part of a split model (gguf_split.cpp): the whole model is read.
#include <algorithm>
#include <array>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "formats/gguf/gguf.hpp"
#include "formats/gguf/gguf_split.hpp"
#include "formats/header_reader.hpp"
#include "lwload/error.hpp"

namespace lwload::formats {
namespace {

constexpr std::string_view kMagic = "GGUF";
constexpr std::uint64_t kDefaultAlignment = 32;
constexpr std::string_view kAlignmentKey = "general.alignment";
constexpr std::uint64_t kGgmlMaxName = 64;          // GGML_MAX_NAME: a name's bytes and its NUL
constexpr std::uint64_t kQuotedNameBytes = 4096;    // a too-long name longer than this is not quoted
constexpr std::uint64_t kMaxKeyLength = 65535;      // GGUF spec: keys are at most 2^16 - 1 bytes
constexpr std::uint32_t kMaxDims = 4;               // GGML_MAX_DIMS
constexpr std::uint64_t kMaxMetaValues = 1u << 24;  // big vocabularies hold ~10^6 values in all
constexpr std::uint64_t kGgufMaxString = 1u << 30;  // GGUF_MAX_STRING_LENGTH (ggml/src/gguf.cpp)

// Smallest tensor info: name length (8) + an empty name + n_dims (4) + no dims + type (4) + offset (8).
constexpr std::uint64_t kMinTensorInfoBytes = 8 + 4 + 4 + 8;
// Smallest KV: key length (8) + a one-byte key + value type (4) + a one-byte value.
constexpr std::uint64_t kMinKvBytes = 8 + 1 + 4 + 1;

// gguf_metadata_value_type
enum ValueType : std::uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kU64 = 10,
  kI64 = 11,
  kF64 = 12,
};

std::string_view value_type_name(std::uint32_t type) {
  switch (type) {
    case kU8: return "UINT8";
    case kI8: return "INT8";
    case kU16: return "UINT16";
    case kI16: return "INT16";
    case kU32: return "UINT32";
    case kI32: return "INT32";
    case kF32: return "FLOAT32";
    case kBool: return "BOOL";
    case kString: return "STRING";
    case kArray: return "ARRAY";
    case kU64: return "UINT64";
    case kI64: return "INT64";
    case kF64: return "FLOAT64";
    default: return "unknown";
  }
}

// Bytes the smallest value of `type` occupies in the file (0 for an unknown type), so that element
// counts can be checked against the bytes left before anything is allocated for them.
std::uint64_t min_value_bytes(std::uint32_t type) {
  switch (type) {
    case kU8:
    case kI8:
    case kBool: return 1;
    case kU16:
    case kI16: return 2;
    case kU32:
    case kI32:
    case kF32: return 4;
    case kU64:
    case kI64:
    case kF64: return 8;
    case kString: return 8;  // the length prefix of an empty string
    default: return 0;
  }
}

// The PackedArray type of an array of `type`, or nullopt for strings and arrays.
std::optional<PackedArray::Type> packed_type(std::uint32_t type) {
  using T = PackedArray::Type;
  switch (type) {
    case kU8: return T::u8;
    case kI8: return T::i8;
    case kU16: return T::u16;
    case kI16: return T::i16;
    case kU32: return T::u32;
    case kI32: return T::i32;
    case kU64: return T::u64;
    case kI64: return T::i64;
    case kF32: return T::f32;
    case kF64: return T::f64;
    case kBool: return T::boolean;
    default: return std::nullopt;
  }
}

struct RawTensor {
  std::uint64_t info_offset;  // where its tensor info starts (for messages)
  std::uint64_t rel_offset;   // relative to the data start, as stored
};

class GgufParser {
 public:
  GgufParser(const RandomAccessFile& file, const std::filesystem::path& path, TensorCaps& caps)
      : in_(file), path_(path), file_size_(file.size()), caps_(caps) {}

  Manifest parse();

 private:
  void read_preamble();
  void read_kv();
  MetaValue read_value(std::uint32_t type, const std::string& what, std::uint64_t type_offset);
  MetaValue read_array(const std::string& what);
  void count_meta_values(std::uint64_t n, const std::string& what);
  void read_tensor_info(std::uint64_t index);
  void place_tensors();
  void check_unique_names() const;

  HeaderReader in_;
  const std::filesystem::path& path_;
  std::uint64_t file_size_;
  TensorCaps& caps_;
  std::uint64_t tensor_count_ = 0;
  std::uint64_t kv_count_ = 0;
  std::uint64_t alignment_ = kDefaultAlignment;
  std::uint64_t meta_values_ = 0;
  std::unordered_set<std::string> keys_;
  std::vector<RawTensor> raw_;
  Manifest manifest_;
};

Manifest GgufParser::parse() {
  manifest_.format = "gguf";
  manifest_.files.push_back(path_);
  read_preamble();
  for (std::uint64_t i = 0; i < kv_count_; ++i) read_kv();

  // Tighter now that the KVs are consumed: every tensor info still to come needs its bytes.
  if (tensor_count_ > in_.remaining() / kMinTensorInfoBytes)
    in_.fail_at(in_.offset(), "tensor infos", tensor_count_, " tensors need at least ", kMinTensorInfoBytes,
                " bytes each but only ", in_.remaining(), " bytes remain");
  // Grown as infos are read (not reserved from the count): memory follows the bytes actually parsed.
  for (std::uint64_t i = 0; i < tensor_count_; ++i) read_tensor_info(i);
  place_tensors();
  check_unique_names();
  return std::move(manifest_);
}

void GgufParser::read_preamble() {
  std::string magic = in_.string(kMagic.size(), "GGUF magic");
  if (magic != kMagic) in_.fail_at(0, "GGUF magic", "expected \"GGUF\", found bytes that are not a GGUF file");

  const std::uint64_t version_offset = in_.offset();
  const std::uint32_t version = in_.u32("GGUF version");
  if (version != 0 && (version & 0xFFFFu) == 0)
    fail(ErrorCode::unsupported, path_.string(), ": GGUF version field reads ", version,
         ": this looks like a big-endian GGUF file; lwload reads little-endian GGUF only");
  if (version == 1)
    fail(ErrorCode::unsupported, path_.string(),
         ": GGUF version 1 is not supported (it predates 64-bit counts); lwload reads versions 2 and 3");
  if (version == 0) in_.fail_at(version_offset, "GGUF version", "version 0 does not exist");
  if (version > 3)
    fail(ErrorCode::unsupported, path_.string(), ": GGUF version ", version,
         " is newer than lwload understands (2 and 3)");

  const std::uint64_t counts_offset = in_.offset();
  tensor_count_ = in_.u64("GGUF tensor count");
  kv_count_ = in_.u64("GGUF metadata KV count");
  // Loose bounds for now (the tensor infos follow the KVs); they catch absurd counts at once.
  if (tensor_count_ > in_.remaining() / kMinTensorInfoBytes)
    in_.fail_at(counts_offset, "GGUF tensor count", tensor_count_, " tensors cannot fit in the ", in_.remaining(),
                " bytes left in the file");
  caps_.check_declared(path_, str("GGUF tensor count at offset ", counts_offset), tensor_count_);
  if (kv_count_ > in_.remaining() / kMinKvBytes)
    in_.fail_at(counts_offset + 8, "GGUF metadata KV count", kv_count_, " key/values cannot fit in the ",
                in_.remaining(), " bytes left in the file");
  count_meta_values(kv_count_, "GGUF metadata KV count");
}

void GgufParser::count_meta_values(std::uint64_t n, const std::string& what) {
  if (n > kMaxMetaValues - meta_values_)
    fail(ErrorCode::unsupported, path_.string(), ": ", what, ": ", n, " more values exceed lwload's header limit of ",
         kMaxMetaValues, " metadata values in all");
  meta_values_ += n;
}

void GgufParser::read_kv() {
  const std::uint64_t key_offset = in_.offset();
  const std::uint64_t key_length = in_.u64("metadata key length");
  if (key_length == 0) in_.fail_at(key_offset, "metadata key", "the key is empty");
  if (key_length > kMaxKeyLength)
    in_.fail_at(key_offset, "metadata key", "length ", key_length, " exceeds GGUF's limit of ", kMaxKeyLength,
                " bytes");
  std::string key = in_.string(key_length, "metadata key");
  const std::string what = "metadata key '" + key + "'";
  if (!keys_.insert(key).second) in_.fail_at(key_offset, what, "the key appears twice");

  const std::uint64_t type_offset = in_.offset();
  const std::uint32_t type = in_.u32(what);
  MetaValue value = read_value(type, what, type_offset);

  if (key == kAlignmentKey) {
    if (type != kU32)
      in_.fail_at(type_offset, what, "must be a UINT32, not ", value_type_name(type),
                  " (ggml's gguf_init_from_file and gguf-py refuse any other type)");
    const std::uint64_t alignment = std::get<std::uint64_t>(value.value);
    if (alignment == 0 || (alignment & (alignment - 1)) != 0)
      in_.fail_at(type_offset, what, "alignment ", alignment, " is not a non-zero power of two");
    alignment_ = alignment;
  }
  manifest_.metadata.push_back(MetaEntry{std::move(key), std::move(value)});
}

MetaValue GgufParser::read_value(std::uint32_t type, const std::string& what, std::uint64_t type_offset) {
  switch (type) {
    case kU8: return {std::uint64_t{in_.u8(what)}};
    case kI8: return {std::int64_t{in_.i8(what)}};
    case kU16: return {std::uint64_t{in_.u16(what)}};
    case kI16: return {std::int64_t{in_.i16(what)}};
    case kU32: return {std::uint64_t{in_.u32(what)}};
    case kI32: return {std::int64_t{in_.i32(what)}};
    case kU64: return {in_.u64(what)};
    case kI64: return {in_.i64(what)};
    case kF32: return {double{in_.f32(what)}};
    case kF64: return {in_.f64(what)};
    case kBool: return {in_.u8(what) != 0};
    case kString: {
      // HeaderReader::string checks the length against the bytes left before allocating; ggml's
      // limit comes first, as in its reader, so a file that holds the bytes is refused too.
      const std::uint64_t length_offset = in_.offset();
      const std::uint64_t length = in_.u64(what);
      if (length > kGgufMaxString)
        in_.fail_at(length_offset, what, "string length ", length, " exceeds ggml's limit of ", kGgufMaxString,
                    " bytes (GGUF_MAX_STRING_LENGTH); gguf_init_from_file refuses the file");
      return {in_.string(length, what)};
    }
    case kArray: return read_array(what);
    default: in_.fail_at(type_offset, what, "unknown value type ", type, " (GGUF defines 0 to 12)");
  }
}

MetaValue GgufParser::read_array(const std::string& what) {
  const std::uint64_t type_offset = in_.offset();
  const std::uint32_t element_type = in_.u32(what);
  if (element_type == kArray)
    in_.fail_at(type_offset, what,
                "an array of arrays: ggml's gguf_init_from_file refuses an array whose "
                "elements are arrays (invalid GGUF type ",
                element_type, ")");
  const std::uint64_t min_bytes = min_value_bytes(element_type);
  if (min_bytes == 0)
    in_.fail_at(type_offset, what, "array of unknown value type ", element_type, " (GGUF defines 0 to 12)");
  const std::uint64_t count = in_.u64(what);
  if (count > in_.remaining() / min_bytes)
    in_.fail_at(type_offset + 4, what, "array of ", count, " ", value_type_name(element_type),
                " values needs at least ", min_bytes, " bytes each but only ", in_.remaining(), " bytes remain");
  // Numbers and booleans stay as the file's bytes: a MetaValue each would cost 40 bytes of memory
  // per byte of header. They cost what the file holds, so no count limits them (ggml reads any
  // array the file holds); strings, a MetaValue each, count against kMaxMetaValues.
  if (const auto packed = packed_type(element_type)) {
    PackedArray array{*packed, {}};
    array.bytes.resize(static_cast<std::size_t>(count * min_bytes));  // checked above: within the file
    in_.read(array.bytes, what);
    return {std::move(array)};
  }
  count_meta_values(count, what);
  MetaValue::Array items;
  items.reserve(static_cast<std::size_t>(count));  // checked above against both limits
  for (std::uint64_t i = 0; i < count; ++i) items.push_back(read_value(element_type, what, type_offset));
  return {std::move(items)};
}

void GgufParser::read_tensor_info(std::uint64_t index) {
  const std::uint64_t info_offset = in_.offset();
  // Plain concatenation, not str(): these labels are built for every tensor (10^4 of them).
  const std::string where = "tensor info #" + std::to_string(index);
  const std::uint64_t name_length = in_.u64(where);
  if (name_length >= kGgmlMaxName) {
    // The tensor is named when its name can be read (an absurd length is reported as a number).
    std::string named;
    if (name_length <= kQuotedNameBytes && name_length <= in_.remaining())
      named = "tensor '" + in_.string(name_length, where) + "': ";
    in_.fail_at(info_offset, where, named, "name length ", name_length, " is not below ggml's limit of ", kGgmlMaxName,
                " bytes (GGML_MAX_NAME, the NUL included); gguf_init_from_file refuses the file");
  }
  TensorInfo tensor;
  tensor.name = in_.string(name_length, where);
  if (const auto nul = tensor.name.find('\0'); nul != std::string::npos)
    in_.fail_at(info_offset, where, "the tensor's name holds a NUL byte at byte ", nul, " of ", name_length,
                ": ggml reads names as C strings and would call this tensor '", tensor.name.substr(0, nul), "'");
  caps_.admit(path_, where, tensor.name);
  const std::string what = "tensor '" + tensor.name + "'";

  const std::uint64_t dims_offset = in_.offset();
  const std::uint32_t n_dims = in_.u32(what);
  if (n_dims > kMaxDims) in_.fail_at(dims_offset, what, "n_dims ", n_dims, " exceeds GGUF's limit of ", kMaxDims);
  for (std::uint32_t d = 0; d < n_dims; ++d) {
    const std::uint64_t ne = in_.u64(what);
    if (ne > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      in_.fail_at(in_.offset() - 8, what, "ne[", d, "] = ", ne, " does not fit a signed 64-bit dimension");
    tensor.shape.push_back(static_cast<std::int64_t>(ne));
  }

  const std::uint64_t type_offset = in_.offset();
  const std::uint32_t ggml_type = in_.u32(what);
  const auto dtype = dtype_from_ggml(ggml_type);
  if (!dtype)
    in_.fail_at(type_offset, what, "ggml type ", ggml_type, " is unknown or retired (e.g. 4, 5, 31-33, 36-38)");
  tensor.dtype = *dtype;
  raw_.push_back(RawTensor{info_offset, in_.u64(what)});
  manifest_.tensors.push_back(std::move(tensor));
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

// ggml's test that a shape's element count is representable (gguf_init_from_file, ne padded to
// four dimensions with 1): each partial product below INT64_MAX, a shape holding a 0 always passing.
bool ggml_counts(const std::vector<std::int64_t>& shape) {
  std::array<std::int64_t, kMaxDims> ne{1, 1, 1, 1};
  // read_tensor_info admitted at most kMaxDims dimensions, each in [0, INT64_MAX].
  std::copy_n(shape.begin(), std::min(shape.size(), ne.size()), ne.begin());
  if (std::find(ne.begin(), ne.end(), 0) != ne.end()) return true;
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  // Evaluated in order, so each product is formed only once the test before it bounds it.
  return !(kMax / ne[1] <= ne[0] || kMax / ne[2] <= ne[0] * ne[1] || kMax / ne[3] <= ne[0] * ne[1] * ne[2]);
}

std::uint64_t round_up(const std::filesystem::path& path, std::uint64_t value, std::uint64_t alignment) {
  const std::uint64_t rem = value % alignment;
  if (rem == 0) return value;
  if (value > std::numeric_limits<std::uint64_t>::max() - (alignment - rem))
    fail(ErrorCode::bad_input, path.string(), ": GGUF data start: header end ", value, " rounded up to alignment ",
         alignment, " overflows 64 bits");
  return value + (alignment - rem);
}

void GgufParser::place_tensors() {
  const std::uint64_t data_start = round_up(path_, in_.offset(), alignment_);
  // Where ggml's reader expects the next tensor's data: the ones before it packed in info order,
  // each padded to the alignment (gguf_init_from_file: "tensor '…' has offset …, expected …").
  std::uint64_t expected = 0;
  for (std::size_t i = 0; i < manifest_.tensors.size(); ++i) {
    TensorInfo& tensor = manifest_.tensors[i];
    const RawTensor& raw = raw_[i];
    const std::string what = "tensor '" + tensor.name + "'";
    const std::string info = what + " info";  // errors located at the tensor's info

    // ggml stores rows of whole blocks: ne0 (not just the element count) must divide evenly.
    const auto layout = dtype_layout(tensor.dtype);
    const std::int64_t ne0 = tensor.shape.empty() ? 1 : tensor.shape.front();
    if (layout && layout->block_elems > 1 && static_cast<std::uint64_t>(ne0) % layout->block_elems != 0)
      in_.fail_at(raw.info_offset, info, "ne0 = ", ne0, " is not a multiple of ", dtype_name(tensor.dtype),
                  "'s block size ", layout->block_elems);
    // A 0 anywhere makes the count 0, however large the dimensions beside it (ggml's test, too).
    const bool empty = std::find(tensor.shape.begin(), tensor.shape.end(), 0) != tensor.shape.end();
    if (!empty && !element_count(tensor.shape))
      in_.fail_at(raw.info_offset, info, "the element count of shape ", shape_text(tensor.shape), " overflows 64 bits");
    if (!ggml_counts(tensor.shape))
      in_.fail_at(raw.info_offset, info, "the element count of shape ", shape_text(tensor.shape),
                  " is not below INT64_MAX, which gguf_init_from_file requires");
    tensor.bytes = empty ? 0 : tensor_bytes(path_, tensor.name, tensor.dtype, tensor.shape);

    if (raw.rel_offset % alignment_ != 0)
      in_.fail_at(raw.info_offset, info, "data offset ", raw.rel_offset, " is not a multiple of the alignment ",
                  alignment_);
    if (raw.rel_offset > std::numeric_limits<std::uint64_t>::max() - data_start)
      in_.fail_at(raw.info_offset, info, "data offset ", raw.rel_offset, " + data start ", data_start,
                  " overflows 64 bits");
    const std::uint64_t offset = data_start + raw.rel_offset;
    check_extent(path_, what, offset, tensor.bytes, file_size_);
    if (raw.rel_offset != expected)
      in_.fail_at(raw.info_offset, info, "data offset ", raw.rel_offset, " but ggml's reader expects ", expected,
                  ": tensors lie in info order, each where the one before it ends rounded up to the alignment ",
                  alignment_, " (gguf_init_from_file refuses any other layout)");
    // Within the file, so neither sum can wrap.
    expected = round_up(path_, raw.rel_offset + tensor.bytes, alignment_);
    if (tensor.bytes == 0) continue;  // an empty tensor occupies no bytes: no piece
    tensor.pieces.push_back(Piece{0, offset, tensor.bytes});
  }
}

void GgufParser::check_unique_names() const {
  if (const TensorInfo* twice = find_duplicate_name(manifest_.tensors)) {
    const auto i = static_cast<std::size_t>(twice - manifest_.tensors.data());
    in_.fail_at(raw_[i].info_offset, str("tensor info #", i), "tensor name '", twice->name, "' appears twice");
  }
}

bool detect(const ModelSource& source) {
  return !source.is_directory && source.head.size() >= kMagic.size() &&
         std::equal(kMagic.begin(), kMagic.end(), source.head.begin(),
                    [](char c, std::byte b) { return static_cast<std::byte>(c) == b; });
}

Manifest read(const ModelSource& source) {
  TensorCaps caps(source.limits);
  Manifest manifest = read_gguf_file(source.fs, source.path, caps);
  if (is_gguf_split(manifest)) return read_gguf_split(source.fs, source.path, std::move(manifest), caps);
  return manifest;
}

}  // namespace

Manifest read_gguf_file(FileSystem& fs, const std::filesystem::path& path, TensorCaps& caps) {
  const auto file = fs.open(path);
  return GgufParser(*file, path, caps).parse();
}

const FormatReader gguf_reader{"gguf", detect, read};

}  // namespace lwload::formats
