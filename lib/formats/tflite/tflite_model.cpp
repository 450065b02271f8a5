// TFLite / Circle flatbuffer → Manifest. One template walks both schemas (flatc generates the same
// accessors for both subsets, see tflite_schema.fbs and tflite_circle_schema.fbs); the differences
// are Circle's extra TensorType values, its `compression_type`, and TFLite's external buffers.
//
// Decisions (documented for users in the reader's header comment, tflite.cpp):
//  - Tensors of subgraph 0 keep their names; tensors of subgraph i > 0 are named "subgraph<i>/<name>"
//    so the same name in two subgraphs (common with control flow) stays distinct. A tensor with no
//    name is "tensor<j>" (its index in the subgraph); a name repeated within the reported tensors
//    gets "#<j>" appended.
//  - Tensors without data (activations, inputs, buffer 0, empty buffers) are omitted. Several
//    tensors sharing one buffer are each reported, with the same piece.
//  - Sparse tensors keep their dense shape and carry TensorInfo::sparsity; their bytes are the
//    stored values (what MediaPipe's Densify op reads), or with OpenOptions::densify the dense
//    tensor (Encoding::sparse, expanded at load by sparse_decode.cpp). One storing no values is a
//    constant of zeros and is reported too.
//  - Buffer.offset/size (extended buffers) are used when offset > 1, as the schema says; the data
//    must lie inside the file and after every flatbuffer structure the reader walked.
#include "formats/tflite/tflite_model.hpp"

#include <flatbuffers/flatbuffers.h>

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <tuple>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "lwload/error.hpp"
#include "tflite_circle_schema_generated.h"
#include "tflite_schema_generated.h"

namespace lwload::formats {
namespace {

// One schema's generated types: tflite and circle generate the same tables, each in its own
// namespace.
template <TfliteFlavor F, typename M, typename Int32V, typename Uint16V, typename Uint8V>
struct Schema {
  using Model = M;
  using Int32Vector = Int32V;
  using Uint16Vector = Uint16V;
  using Uint8Vector = Uint8V;
  static constexpr TfliteFlavor flavor = F;
  static constexpr std::string_view format = F == TfliteFlavor::circle ? "circle" : "tflite";
};
using TfliteSchema = Schema<TfliteFlavor::tflite, fb::tflite::Model, fb::tflite::Int32Vector, fb::tflite::Uint16Vector,
                            fb::tflite::Uint8Vector>;
using CircleSchema = Schema<TfliteFlavor::circle, fb::circle::Model, fb::circle::Int32Vector, fb::circle::Uint16Vector,
                            fb::circle::Uint8Vector>;

// A lower bound of where the flatbuffer ends, grown over every structure the reader walks. The
// schema does not record the flatbuffer's length, but extended buffer data must come after it, so
// data starting below this bound would alias the model's own tables.
class FlatbufferExtent {
 public:
  explicit FlatbufferExtent(const std::uint8_t* base) : base_(base) {}

  void cover(const void* p, std::uint64_t n) {
    const auto start = static_cast<std::uint64_t>(static_cast<const std::uint8_t*>(p) - base_);
    end_ = std::max(end_, start + n);
  }
  // Generated tables derive privately from flatbuffers::Table; they are its bytes.
  void table(const void* generated_table) {
    if (!generated_table) return;
    const auto* t = static_cast<const flatbuffers::Table*>(generated_table);
    const std::uint8_t* vtable = t->GetVTable();
    cover(vtable, flatbuffers::ReadScalar<flatbuffers::voffset_t>(vtable));
    cover(t, flatbuffers::ReadScalar<flatbuffers::voffset_t>(vtable + sizeof(flatbuffers::voffset_t)));
  }
  template <typename T>
  void vector(const flatbuffers::Vector<T>* v) {
    if (v) cover(v, sizeof(flatbuffers::uoffset_t) + std::uint64_t{v->size()} * sizeof(T));
  }
  void string(const flatbuffers::String* s) {
    if (s) cover(s, sizeof(flatbuffers::uoffset_t) + std::uint64_t{s->size()} + 1);
  }
  // A vector of tables: the vector, each table, and what `inside` covers of each.
  template <typename T, typename Inside>
  void tables(const flatbuffers::Vector<flatbuffers::Offset<T>>* v, Inside inside) {
    if (!v) return;
    vector(v);
    for (const T* t : *v) {
      table(t);
      inside(t);
    }
  }
  std::uint64_t end() const noexcept { return end_; }

 private:
  const std::uint8_t* base_;
  std::uint64_t end_ = 0;
};

// Where a tensor's bytes are.
struct Location {
  std::uint32_t file = 0;
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
};

// A file named by an external buffer group, opened once.
struct GroupFile {
  std::uint32_t file_index = 0;
  std::filesystem::path path;
  std::uint64_t size = 0;
};

std::string string_of(const flatbuffers::String* s) { return s ? s->str() : std::string(); }

// A metadata buffer's value when it is short text (TFLite's "min_runtime_version" is "1.5.0\0...").
std::optional<std::string> short_text(const flatbuffers::Vector<std::uint8_t>* data) {
  if (!data || data->size() == 0 || data->size() > 256) return std::nullopt;
  std::string text(reinterpret_cast<const char*>(data->Data()), data->size());
  while (!text.empty() && text.back() == '\0') text.pop_back();
  if (text.empty()) return std::nullopt;
  for (const char c : text)
    if (c < 0x20 || c > 0x7e) return std::nullopt;
  return text;
}

template <typename S>
class ModelReader {
 public:
  using Model = typename S::Model;

  explicit ModelReader(const TfliteInput& input)
      : input_(input),
        file_(input.source.path),
        base_(input.flatbuffer.data()),
        extent_(base_),
        caps_(input.source.limits) {}

  Manifest read() {
    verify();
    check_tables_outside_payloads(input_, S::flavor);
    model_ = flatbuffers::GetRoot<Model>(base_);
    manifest_.format = std::string(S::format);
    manifest_.files.push_back(file_);
    measure_extent();
    read_metadata();
    const auto* subgraphs = model_->subgraphs();
    if (!subgraphs) return std::move(manifest_);
    for (flatbuffers::uoffset_t sg = 0; sg < subgraphs->size(); ++sg) {
      const auto* tensors = subgraphs->Get(sg)->tensors();
      if (!tensors) continue;
      tensors_field_ = str("subgraphs[", sg, "].tensors");
      for (flatbuffers::uoffset_t j = 0; j < tensors->size(); ++j) read_tensor(*tensors->Get(j), sg, j);
    }
    return std::move(manifest_);
  }

 private:
  template <typename Tensor>
  void read_tensor(const Tensor& tensor, flatbuffers::uoffset_t subgraph, flatbuffers::uoffset_t index) {
    const std::string raw_name = string_of(tensor.name());
    std::string name = subgraph == 0 ? std::string() : "subgraph" + std::to_string(subgraph) + "/";
    name += raw_name.empty() ? "tensor" + std::to_string(index) : raw_name;

    std::optional<Location> where = locate(tensor, name);
    // No data: an activation, an input, or a variable without initial value. A sparse tensor
    // storing no values is a constant all of zeros, and is reported.
    if (!where && !tensor.sparsity()) return;
    if (!where) where = Location{};

    if constexpr (S::flavor == TfliteFlavor::circle) {
      if (tensor.compression_type() != fb::circle::CompressionType_NONE)
        fail(ErrorCode::unsupported, file_.string(), ": tensor '", name,
             "': field compression_type: ", int{static_cast<std::int8_t>(tensor.compression_type())},
             " (HUFFMAN): compressed Circle tensors are not supported");
    }

    TensorInfo info;
    info.dtype = tflite_dtype(static_cast<std::int8_t>(tensor.type()), S::flavor, file_, name);
    if (const auto* shape = tensor.shape()) {
      if (shape->size() > kMaxRank)
        fail(ErrorCode::bad_input, file_.string(), ": tensor '", name, "': field shape has ", shape->size(),
             " dimensions (at most ", kMaxRank, ")");
      info.shape.reserve(shape->size());
      for (const std::int32_t dim : *shape) info.shape.push_back(dim);
    }
    info.bytes = where->length;
    if (where->length > 0) info.pieces.push_back(Piece{where->file, where->offset, where->length});
    if (const auto* sparsity = tensor.sparsity()) {
      info.sparsity = shared_sparsity(*sparsity, name, info.dtype, info.shape, where->length);
      if (input_.source.densify) {
        info.encoding = Encoding::sparse;
        info.bytes = info.sparsity->dense_bytes;
      }
    } else if (info.dtype != DType::STRING) {
      // STRING buffers are TFLite's own variable-length layout (count, offsets, bytes): no fixed size.
      check_tensor_length(file_, name, info.dtype, info.shape, where->length);
    }
    info.quantization = quantization(tensor, name, info.shape);
    info.name = unique_name(std::move(name), index);
    caps_.admit(file_, tensors_field_, info.name);
    manifest_.tensors.push_back(std::move(info));
  }

  // The bytes of a tensor's buffer (inline, extended or external), or nullopt when it has none.
  template <typename Tensor>
  std::optional<Location> locate(const Tensor& tensor, const std::string& name) {
    const std::optional<Location> buffer = buffer_location(tensor.buffer(), name);
    if constexpr (S::flavor == TfliteFlavor::tflite) {
      if (tensor.external_buffer() != 0) {
        if (buffer)
          fail(ErrorCode::bad_input, file_.string(), ": tensor '", name, "': has both buffer ", tensor.buffer(),
               " with data and external_buffer ", tensor.external_buffer());
        return external_location(tensor.external_buffer(), name);
      }
    }
    return buffer;
  }

  std::optional<Location> buffer_location(std::uint32_t index, const std::string& name) {
    if (index == 0) return std::nullopt;  // the empty sentinel, whatever it holds
    const auto* buffers = model_->buffers();
    const std::uint32_t count = buffers ? buffers->size() : 0;
    if (index >= count)
      fail(ErrorCode::bad_input, file_.string(), ": tensor '", name, "': field buffer: index ", index,
           " is out of range (the model has ", count, " buffers)");
    const auto* buffer = buffers->Get(index);
    const auto* data = buffer->data();
    const bool has_inline = data && data->size() > 0;
    const bool extended = buffer->offset() > 1;  // "only valid if > 1"
    if (has_inline && extended)
      fail(ErrorCode::bad_input, file_.string(), ": tensor '", name, "': buffer ", index, " has both inline data (",
           data->size(), " bytes) and an extended offset ", buffer->offset());
    if (has_inline) return Location{0, static_cast<std::uint64_t>(data->Data() - base_), data->size()};
    if (!extended || buffer->size() == 0) return std::nullopt;

    const std::uint64_t offset = buffer->offset(), size = buffer->size();
    check_extent(file_, str("tensor '", name, "': buffer ", index, " offset/size"), offset, size, input_.file_size);
    if (offset < extent_.end())
      fail(ErrorCode::bad_input, file_.string(), ": tensor '", name, "': buffer ", index, " offset ", offset,
           " lies inside the flatbuffer (its tables reach byte ", extent_.end(),
           "); extended buffer data must follow the flatbuffer");
    return Location{0, offset, size};
  }

  std::optional<Location> external_location(std::uint32_t id, const std::string& name) {
    if (!external_by_id_) index_external_buffers();
    const auto it = external_by_id_->find(id);
    if (it == external_by_id_->end())
      fail(ErrorCode::bad_input, file_.string(), ": tensor '", name, "': field external_buffer: id ", id,
           " is not in Model.external_buffers");
    const auto& external = *it->second;
    if (external.length() == 0) return std::nullopt;
    if (const auto* packing = external.packing(); packing && packing->size() > 0 && packing->str() != "unpacked")
      fail(ErrorCode::unsupported, file_.string(), ": tensor '", name, "': external buffer ", id, " packing '",
           packing->str(), "' is not raw elements");
    const GroupFile& group = group_file(external.group(), name);
    check_extent(group.path, str("tensor '", name, "': external buffer ", id, " offset/length"), external.offset(),
                 external.length(), group.size);
    return Location{group.file_index, external.offset(), external.length()};
  }

  void index_external_buffers() {
    external_by_id_.emplace();
    if constexpr (S::flavor == TfliteFlavor::tflite) {
      const auto* externals = model_->external_buffers();
      if (!externals) return;
      external_by_id_->reserve(externals->size());
      for (const auto* external : *externals) {
        if (external->id() == 0) continue;  // unreachable: a tensor's 0 means "none"
        if (!external_by_id_->emplace(external->id(), external).second)
          fail(ErrorCode::bad_input, file_.string(), ": Model.external_buffers: id ", external->id(), " appears twice");
      }
    }
  }

  const GroupFile& group_file(std::uint32_t group, const std::string& name) {
    const auto* groups = model_->external_buffer_groups();
    const std::uint32_t count = groups ? groups->size() : 0;
    if (group >= count)
      fail(ErrorCode::bad_input, file_.string(), ": tensor '", name, "': external buffer group ", group,
           " is out of range (the model has ", count, " groups)");
    if (group_files_.empty()) group_files_.resize(count);
    auto& slot = group_files_[group];
    if (slot) return *slot;
    const auto* group_name = groups->Get(group)->name();
    if (!group_name || group_name->size() == 0)
      fail(ErrorCode::bad_input, file_.string(), ": external_buffer_groups[", group, "]: has no name");
    GroupFile opened;
    opened.path = resolve_inside(file_.parent_path(), group_name->string_view(), file_,
                                 str("external_buffer_groups[", group, "].name"));
    if (!input_.source.fs.exists(opened.path))
      fail(ErrorCode::bad_input, file_.string(), ": tensor '", name, "': external buffer file '", opened.path.string(),
           "' (group ", group, ") is missing");
    opened.size = input_.source.fs.open(opened.path)->size();
    opened.file_index = file_index(manifest_, opened.path);
    slot = std::move(opened);
    return *slot;
  }

  // SparsityParameters → Sparsity, checked so that densifying stays inside the dense tensor and
  // consumes exactly the stored values: every level's size follows from the shape and the blocks,
  // every index is below its level's size, segments rise, and the walk's leaves are counted here
  // (without walking: each level's positions form one contiguous range).
  // A SparsityParameters table read once: tensors may share it only when they agree on what it
  // describes (shape, dtype, stored length), else its index arrays would be copied and checked per
  // tensor — the amplification a shared table buys.
  // Distinct tables that share their index vectors (what the vectors' offsets say) are one
  // Sparsity too; what is still copied, across tables, is charged to the file's size (charge()).
  template <typename Params>
  std::shared_ptr<const Sparsity> shared_sparsity(const Params& params, const std::string& name, DType dtype,
                                                  const std::vector<std::int64_t>& shape, std::uint64_t stored_bytes) {
    auto& [cached, owner] = sparsities_[&params];
    if (!cached) {
      std::shared_ptr<const Sparsity>& by_vectors =
          sparsity_by_vectors_[sparsity_key(params, dtype, shape, stored_bytes)];
      if (!by_vectors) {
        by_vectors = read_sparsity(params, name, dtype, shape, stored_bytes);
        std::uint64_t entries = 0;
        for (const Sparsity::Level& level : by_vectors->levels) entries += level.segments.size() + level.indices.size();
        charge(entries, name, "sparsity");
      }
      cached = by_vectors;
      owner = {dtype, shape, stored_bytes};
    } else if (std::tie(owner.dtype, owner.shape, owner.stored_bytes) != std::tie(dtype, shape, stored_bytes)) {
      fail(ErrorCode::bad_input, file_.string(), ": tensor '", name,
           "': field sparsity: shares its SparsityParameters with a tensor of another shape, dtype or length");
    }
    return cached;
  }

  // What a SparsityParameters table says, by value for its small fields and by offset for its index
  // vectors: two tables with the same key describe the same Sparsity.
  template <typename Params>
  std::vector<std::uint64_t> sparsity_key(const Params& params, DType dtype, const std::vector<std::int64_t>& shape,
                                          std::uint64_t stored_bytes) const {
    const auto address = [&](const void* p) {
      return static_cast<std::uint64_t>(static_cast<const std::uint8_t*>(p) - base_);
    };
    std::vector<std::uint64_t> key{static_cast<std::uint64_t>(dtype), stored_bytes, shape.size()};
    for (const std::int64_t d : shape) key.push_back(static_cast<std::uint64_t>(d));
    // Small vectors by value, index vectors by offset (whichever tables hold them); a table too
    // large to be honest keeps its own identity (read_sparsity refuses it).
    const auto small = [&](const auto* v) {
      if (!v || v->size() > 64) return key.push_back(v ? address(v) : 0), void();
      key.push_back(v->size());
      for (const auto x : *v) key.push_back(static_cast<std::uint64_t>(static_cast<std::int64_t>(x)));
    };
    small(params.traversal_order());
    small(params.block_map());
    const auto* dims = params.dim_metadata();
    if (!dims || dims->size() > 32) return key.push_back(dims ? address(dims) : 0), key;
    key.push_back(dims->size());
    for (const auto* dim : *dims) {
      key.push_back(static_cast<std::uint64_t>(dim->format()));
      key.push_back(static_cast<std::uint64_t>(static_cast<std::uint32_t>(dim->dense_size())));
      for (const auto& [type, table] : {std::pair{static_cast<int>(dim->array_segments_type()), dim->array_segments()},
                                        std::pair{static_cast<int>(dim->array_indices_type()), dim->array_indices()}}) {
        key.push_back(static_cast<std::uint64_t>(type));
        const void* values = nullptr;
        if (table && type == 1) values = static_cast<const typename S::Int32Vector*>(table)->values();
        if (table && type == 2) values = static_cast<const typename S::Uint16Vector*>(table)->values();
        if (table && type == 3) values = static_cast<const typename S::Uint8Vector*>(table)->values();
        key.push_back(values ? address(values) : table ? address(table) : 0);
      }
    }
    return key;
  }

  // Values copied out of shared vectors, over all tables read: at most about one per byte of the
  // file (an honest file's vectors are each its own bytes, read once), so sharing one large
  // vector between many distinct tables is refused instead of copied per table.
  void charge(std::uint64_t entries, const std::string& name, std::string_view field) {
    const std::uint64_t budget = input_.flatbuffer.size() + (std::uint64_t{1} << 20);
    copied_entries_ += entries;
    if (copied_entries_ > budget)
      fail(ErrorCode::bad_input, file_.string(), ": tensor '", name, "': field ", field,
           ": the tables read so far copy ", copied_entries_, " values out of a ", input_.flatbuffer.size(),
           "-byte flatbuffer: distinct tables share the same large vectors (at most one value per byte of the file)");
  }

  template <typename Params>
  std::shared_ptr<const Sparsity> read_sparsity(const Params& params, const std::string& name, DType dtype,
                                                const std::vector<std::int64_t>& shape, std::uint64_t stored_bytes) {
    const auto bad = [&](const auto&... what) {
      fail(ErrorCode::bad_input, file_.string(), ": tensor '", name, "': field sparsity.", what...);
    };
    const auto layout = dtype_layout(dtype);
    if (!layout || layout->block_elems != 1 || dtype == DType::STRING)
      fail(ErrorCode::unsupported, file_.string(), ": tensor '", name, "': sparse ", dtype_name(dtype),
           " tensors are not supported (elements must be whole bytes)");
    Sparsity out;
    out.dense_bytes = tensor_bytes(file_, name, dtype, shape);
    if (stored_bytes % layout->block_bytes != 0)
      fail(ErrorCode::bad_input, file_.string(), ": tensor '", name, "': its buffer holds ", stored_bytes,
           " bytes, not a whole number of ", dtype_name(dtype), " values");
    out.stored_values = stored_bytes / layout->block_bytes;

    const std::size_t rank = shape.size();
    if (const auto* v = params.traversal_order()) out.traversal_order.assign(v->begin(), v->end());
    if (const auto* v = params.block_map()) out.block_map.assign(v->begin(), v->end());
    const auto* dims = params.dim_metadata();
    const std::size_t levels = out.traversal_order.size();
    if (rank == 0 || levels != rank + out.block_map.size() || !dims || dims->size() != levels || levels > 32)
      bad("traversal_order: ", levels, " levels for a rank-", rank, " tensor with ", out.block_map.size(),
          " block dimensions and ", dims ? dims->size() : 0, " dim_metadata entries (they must agree, at most 32)");
    std::vector<bool> seen(levels, false);
    for (std::size_t i = 0; i < levels; ++i) {
      const std::int32_t d = out.traversal_order[i];
      // The tensor's dimensions come first, then its block dimensions in order (as TFLite writes them).
      const bool ok = i < rank ? d >= 0 && static_cast<std::size_t>(d) < rank && !seen[static_cast<std::size_t>(d)]
                               : static_cast<std::size_t>(d) == i;
      if (!ok) bad("traversal_order[", i, "]: ", d, " is not a permutation of the dimensions followed by the blocks");
      seen[static_cast<std::size_t>(d)] = true;
    }
    std::vector<std::int64_t> blocked(shape);
    for (std::size_t j = 0; j < out.block_map.size(); ++j) {
      const std::int32_t d = out.block_map[j];
      const std::int32_t block = dims->Get(static_cast<flatbuffers::uoffset_t>(rank + j))->dense_size();
      if (d < 0 || static_cast<std::size_t>(d) >= rank ||
          blocked[static_cast<std::size_t>(d)] != shape[static_cast<std::size_t>(d)])
        bad("block_map[", j, "]: ", d, " is not a dimension, or blocks one twice");
      if (block <= 0 || shape[static_cast<std::size_t>(d)] % block != 0)
        bad("dim_metadata[", rank + j, "].dense_size: block size ", block, " does not divide dimension ", d, " (",
            shape[static_cast<std::size_t>(d)], ")");
      blocked[static_cast<std::size_t>(d)] /= block;
    }
    // The range of positions the walk visits at each level: [0, 1) above the first.
    std::uint64_t lo = 0, hi = 1;
    for (std::size_t i = 0; i < levels; ++i) {
      const auto* dim = dims->Get(static_cast<flatbuffers::uoffset_t>(i));
      const std::size_t t = static_cast<std::size_t>(out.traversal_order[i]);
      const std::int64_t size = t < rank ? blocked[t] : dim->dense_size();
      if (size > std::numeric_limits<std::int32_t>::max())
        bad("dim_metadata[", i, "]: level size ", size, " is too large");
      Sparsity::Level level;
      level.size = static_cast<std::uint32_t>(size);
      const auto format = static_cast<int>(dim->format());  // DENSE 0, SPARSE_CSR 1
      if (format != 0 && format != 1) bad("dim_metadata[", i, "].format: ", format, " is neither DENSE nor SPARSE_CSR");
      level.sparse = format == 1;
      if (!level.sparse) {
        if (dim->dense_size() != size)
          bad("dim_metadata[", i, "].dense_size: ", dim->dense_size(), ", but the level has ", size, " coordinates");
        if (size != 0 && hi > std::numeric_limits<std::uint64_t>::max() / static_cast<std::uint64_t>(size))
          bad("dim_metadata[", i, "]: the levels' sizes overflow");
        lo *= static_cast<std::uint64_t>(size);
        hi *= static_cast<std::uint64_t>(size);
      } else {
        level.segments = index_vector(dim->array_segments_type(), dim->array_segments(), name, i, "array_segments");
        level.indices = index_vector(dim->array_indices_type(), dim->array_indices(), name, i, "array_indices");
        if (level.segments.size() < hi + 1)
          bad("dim_metadata[", i, "].array_segments: ", level.segments.size(), " entries, the level above has ", hi,
              " positions (needs one more)");
        for (std::uint64_t p = lo; p < hi; ++p)
          if (level.segments[p] > level.segments[p + 1])
            bad("dim_metadata[", i, "].array_segments[", p + 1, "]: ", level.segments[p + 1],
                " is below the one before");
        if (level.segments[hi] > level.indices.size())
          bad("dim_metadata[", i, "].array_segments[", hi, "]: ", level.segments[hi], " is past array_indices (",
              level.indices.size(), " entries)");
        for (std::uint64_t k = level.segments[lo]; k < level.segments[hi]; ++k)
          if (level.indices[k] >= level.size)
            bad("dim_metadata[", i, "].array_indices[", k, "]: ", level.indices[k], " is outside the level's ",
                level.size, " coordinates");
        std::tie(lo, hi) = std::pair<std::uint64_t, std::uint64_t>{level.segments[lo], level.segments[hi]};
      }
      out.levels.push_back(std::move(level));
    }
    if (hi - lo != out.stored_values)
      fail(ErrorCode::bad_input, file_.string(), ": tensor '", name, "': its buffer holds ", out.stored_values,
           " values but field sparsity places ", hi - lo);
    return std::make_shared<const Sparsity>(std::move(out));
  }

  // A SparseIndexVector (int32, uint16 or uint8 values) as unsigned coordinates.
  template <typename Type>
  std::vector<std::uint32_t> index_vector(Type type, const void* table, const std::string& name, std::size_t level,
                                          std::string_view field) const {
    using Int32Vector = typename S::Int32Vector;
    using Uint16Vector = typename S::Uint16Vector;
    using Uint8Vector = typename S::Uint8Vector;
    std::vector<std::uint32_t> out;
    const auto copy = [&](const auto* vector) {
      const auto* values = vector ? vector->values() : nullptr;
      if (!values) return false;
      out.reserve(values->size());
      for (const auto v : *values) {
        if (v < 0)
          fail(ErrorCode::bad_input, file_.string(), ": tensor '", name, "': field sparsity.dim_metadata[", level, "].",
               field, ": ", v, " is negative");
        out.push_back(static_cast<std::uint32_t>(v));
      }
      return true;
    };
    const auto kind = static_cast<int>(type);
    const bool ok = kind == 1   ? copy(static_cast<const Int32Vector*>(table))
                    : kind == 2 ? copy(static_cast<const Uint16Vector*>(table))
                    : kind == 3 ? copy(static_cast<const Uint8Vector*>(table))
                                : false;
    if (!ok)
      fail(ErrorCode::bad_input, file_.string(), ": tensor '", name, "': field sparsity.dim_metadata[", level, "].",
           field, ": a SPARSE_CSR level needs it (Int32Vector, Uint16Vector or Uint8Vector), got type ", kind);
    return out;
  }

  // One Quantization per QuantizationParameters table: tensors sharing a table (a writer may, and a
  // hostile file does, with a table of thousands of scales) share the record instead of copying it.
  template <typename Tensor>
  std::shared_ptr<const Quantization> quantization(const Tensor& tensor, const std::string& name,
                                                   const std::vector<std::int64_t>& shape) {
    const auto* q = tensor.quantization();
    if (!q || !q->scale() || q->scale()->size() == 0) return nullptr;
    // By the vectors' offsets, not the table's: distinct tables sharing one scale vector (and zero
    // points and axis) share the record too.
    const auto address = [&](const void* p) {
      return p ? static_cast<std::uint64_t>(static_cast<const std::uint8_t*>(p) - base_) : std::uint64_t{0};
    };
    const std::tuple<std::uint64_t, std::uint64_t, std::uint64_t> key{
        address(q->scale()), address(q->zero_point()),
        static_cast<std::uint64_t>(static_cast<std::uint32_t>(q->quantized_dimension()))};
    // TFLite Micro reads per-channel scales of a rank-1 tensor (a bias) along its only dimension
    // whatever quantized_dimension says (TOCO wrote 3, the filter's channel axis, in
    // person_detect.tflite); LiteRT refuses it. lwload accepts what Micro runs, reports axis 0,
    // and says so in the metadata.
    if (shape.size() == 1 && q->scale()->size() > 1 && q->quantized_dimension() >= 1 &&
        static_cast<std::int64_t>(q->scale()->size()) == shape[0]) {
      auto& micro = micro_quantizations_[key];
      if (!micro) {
        Quantization out = quantization_values(*q, name);
        out.axis = 0;
        micro = std::make_shared<const Quantization>(std::move(out));
        charge(micro->scale.size() + micro->zero_point.size(), name, "quantization");
      }
      manifest_.metadata.push_back(MetaEntry{"tflite.quantized_dimension_taken_as_0." + name,
                                             MetaValue{std::int64_t{q->quantized_dimension()}}});
      return micro;
    }
    auto& cached = quantizations_[key];
    if (!cached) {
      cached = read_quantization(*q, name, shape);
      charge(cached->scale.size() + cached->zero_point.size(), name, "quantization");
    } else if (cached->scale.size() > 1) {
      check_channels(*cached, name, shape);
    }
    return cached;
  }

  // Scales and zero points as stored (axis left to the caller), their counts checked to agree.
  template <typename Params>
  Quantization quantization_values(const Params& q, const std::string& name) const {
    Quantization out;
    out.scheme = "tflite";
    for (const float s : *q.scale()) out.scale.push_back(s);
    if (const auto* zero_points = q.zero_point())
      for (const std::int64_t z : *zero_points) out.zero_point.push_back(z);
    if (!out.zero_point.empty() && out.zero_point.size() != out.scale.size())
      fail(ErrorCode::bad_input, file_.string(), ": tensor '", name, "': field quantization.zero_point has ",
           out.zero_point.size(), " entries but quantization.scale has ", out.scale.size());
    return out;
  }

  template <typename Params>
  std::shared_ptr<const Quantization> read_quantization(const Params& params, const std::string& name,
                                                        const std::vector<std::int64_t>& shape) const {
    Quantization out = quantization_values(params, name);
    out.axis = params.quantized_dimension();
    if (out.scale.size() > 1) check_channels(out, name, shape);
    return std::make_shared<const Quantization>(std::move(out));
  }

  // Per channel: one scale per index of the quantized dimension, for each tensor using the table.
  void check_channels(const Quantization& q, const std::string& name, const std::vector<std::int64_t>& shape) const {
    if (q.axis < 0 || static_cast<std::size_t>(q.axis) >= shape.size())
      fail(ErrorCode::bad_input, file_.string(), ": tensor '", name,
           "': field quantization.quantized_dimension: ", q.axis, " is outside the tensor's rank ", shape.size());
    if (shape[static_cast<std::size_t>(q.axis)] != static_cast<std::int64_t>(q.scale.size()))
      fail(ErrorCode::bad_input, file_.string(), ": tensor '", name, "': field quantization.scale has ", q.scale.size(),
           " entries but dimension ", q.axis, " has size ", shape[static_cast<std::size_t>(q.axis)]);
  }

  std::string unique_name(std::string name, flatbuffers::uoffset_t index) {
    if (!names_.insert(name).second) {
      name += "#" + std::to_string(index);
      while (!names_.insert(name).second) name += "'";
    }
    return name;
  }

  void verify() {
    const auto size = input_.flatbuffer.size();
    // Each table is at least 4 bytes, so honest files stay below this; it bounds the work a
    // malicious file whose tables are shared many times can cause.
    const auto max_tables = static_cast<flatbuffers::uoffset_t>(std::max<std::size_t>(1'000'000, size / 4));
    flatbuffers::Verifier verifier(base_, size, 64, max_tables);
    if (!verifier.template VerifyBuffer<Model>(nullptr))
      fail(ErrorCode::bad_input, file_.string(), ": the ", S::format,
           " flatbuffer fails verification: a table, vector or string lies outside its first ", size,
           " bytes, is misaligned, or nests too deep",
           input_.unread.empty() ? "" : " (or lies inside a buffer's data, which is not read to find tables)");
  }

  void measure_extent() {
    extent_.table(model_);
    extent_.tables(model_->buffers(), [&](const auto* buffer) { extent_.vector(buffer->data()); });
    extent_.tables(model_->subgraphs(), [&](const auto* subgraph) {
      extent_.string(subgraph->name());
      extent_.tables(subgraph->tensors(), [&](const auto* tensor) {
        extent_.string(tensor->name());
        extent_.vector(tensor->shape());
        measure_sparsity(tensor->sparsity());
      });
    });
    extent_.string(model_->description());
  }

  template <typename Params>
  void measure_sparsity(const Params* params) {
    if (!params) return;
    extent_.table(params);
    extent_.vector(params->traversal_order());
    extent_.vector(params->block_map());
    extent_.tables(params->dim_metadata(), [&](const auto* dim) {
      for (const auto* vector : {dim->array_segments_as_Int32Vector(), dim->array_indices_as_Int32Vector()})
        if (vector) extent_.table(vector), extent_.vector(vector->values());
      for (const auto* vector : {dim->array_segments_as_Uint16Vector(), dim->array_indices_as_Uint16Vector()})
        if (vector) extent_.table(vector), extent_.vector(vector->values());
      for (const auto* vector : {dim->array_segments_as_Uint8Vector(), dim->array_indices_as_Uint8Vector()})
        if (vector) extent_.table(vector), extent_.vector(vector->values());
    });
  }

  void read_metadata() {
    auto& meta = manifest_.metadata;
    if (const auto* description = model_->description()) meta.push_back({"description", MetaValue{description->str()}});
    meta.push_back({"version", MetaValue{std::uint64_t{model_->version()}}});
    MetaValue::Array names;
    if (const auto* subgraphs = model_->subgraphs())
      for (const auto* subgraph : *subgraphs) names.push_back(MetaValue{string_of(subgraph->name())});
    meta.push_back({"subgraphs", MetaValue{std::move(names)}});
    // Model.metadata: named buffers (min_runtime_version, CONVERSION_METADATA, ...). Short text is
    // kept as text; anything else is reported by its size only (it is not read).
    const auto* entries = model_->metadata();
    const auto* buffers = model_->buffers();
    if (!entries || !buffers) return;
    for (const auto* entry : *entries) {
      if (entry->buffer() >= buffers->size()) continue;  // not a tensor: nothing to load, keep going
      const auto* buffer = buffers->Get(entry->buffer());
      const std::string key = "metadata." + string_of(entry->name());
      if (auto text = short_text(buffer->data())) meta.push_back({key, MetaValue{std::move(*text)}});
      else meta.push_back({key, MetaValue{std::uint64_t{buffer->data() ? buffer->data()->size() : buffer->size()}}});
    }
  }

  const TfliteInput& input_;
  const std::filesystem::path& file_;
  const std::uint8_t* base_;
  const Model* model_ = nullptr;
  FlatbufferExtent extent_;
  Manifest manifest_;
  TensorCaps caps_;
  std::string tensors_field_;  // "subgraphs[i].tensors" of the subgraph being read
  std::unordered_set<std::string> names_;
  std::optional<std::unordered_map<std::uint32_t, const fb::tflite::ExternalBuffer*>> external_by_id_;
  std::vector<std::optional<GroupFile>> group_files_;
  std::map<std::tuple<std::uint64_t, std::uint64_t, std::uint64_t>, std::shared_ptr<const Quantization>> quantizations_;
  std::map<std::tuple<std::uint64_t, std::uint64_t, std::uint64_t>, std::shared_ptr<const Quantization>>
      micro_quantizations_;  // rank-1 per-channel tensors whose axis is taken as 0
  std::map<std::vector<std::uint64_t>, std::shared_ptr<const Sparsity>> sparsity_by_vectors_;
  std::uint64_t copied_entries_ = 0;  // charge()
  struct SparseOwner {
    DType dtype{};
    std::vector<std::int64_t> shape;
    std::uint64_t stored_bytes = 0;
  };
  std::unordered_map<const void*, std::pair<std::shared_ptr<const Sparsity>, SparseOwner>> sparsities_;
};

}  // namespace

Manifest read_tflite_flatbuffer(const TfliteInput& input, TfliteFlavor flavor) {
  if (flavor == TfliteFlavor::circle) return ModelReader<CircleSchema>(input).read();
  return ModelReader<TfliteSchema>(input).read();
}

}  // namespace lwload::formats
