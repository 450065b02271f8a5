// The tables of a TFLite / Circle flatbuffer must lie outside the Buffer.data payloads tflite.cpp
// leaves unread (their bytes are zeros in its snapshot). A table, vector or string stored inside a
// tensor's data would read as zeros there, where flatc and TFLite read the real bytes (a tensor's
// type, its quantization): two readings of one file. This walk visits every structure of the
// schema subset — what the Verifier visited and the reader reads — and refuses the file when one
// reaches into an unread range, naming it. Tables are visited once each (shared tables are common
// and hostile files share them many times); a vector is checked from its length, never read.
#include <flatbuffers/flatbuffers.h>

#include <algorithm>
#include <unordered_set>

#include "formats/tflite/tflite_model.hpp"
#include "lwload/error.hpp"
#include "tflite_circle_schema_generated.h"
#include "tflite_schema_generated.h"

namespace lwload::formats {
namespace {

template <typename Model>
class TableCover {
 public:
  TableCover(const TfliteInput& input, std::uint64_t payload_threshold)
      : input_(input), base_(input.flatbuffer.data()), threshold_(payload_threshold) {}

  void run(const Model* model) {
    if (!table(model, "Model")) return;
    if (const auto* subgraphs = model->subgraphs()) {
      vector(subgraphs, "Model.subgraphs");
      for (const auto* subgraph : *subgraphs) {
        if (!table(subgraph, "SubGraph")) continue;
        string(subgraph->name(), "SubGraph.name");
        const auto* tensors = subgraph->tensors();
        if (!tensors) continue;
        vector(tensors, "SubGraph.tensors");
        for (const auto* tensor : *tensors) walk_tensor(tensor);
      }
    }
    string(model->description(), "Model.description");
    if (const auto* buffers = model->buffers()) {
      vector(buffers, "Model.buffers");
      for (const auto* buffer : *buffers) {
        if (!table(buffer, "Buffer")) continue;
        // Large payloads are what the snapshot leaves out: only their length is read.
        if (const auto* data = buffer->data())
          cover(data, data->size() < threshold_ ? 4 + std::uint64_t{data->size()} : 4, "Buffer.data");
      }
    }
    if (const auto* metadata = model->metadata()) {
      vector(metadata, "Model.metadata");
      for (const auto* entry : *metadata)
        if (table(entry, "Metadata")) string(entry->name(), "Metadata.name");
    }
    if constexpr (requires { model->external_buffers(); }) {
      if (const auto* groups = model->external_buffer_groups()) {
        vector(groups, "Model.external_buffer_groups");
        for (const auto* group : *groups)
          if (table(group, "ExternalBufferGroup")) string(group->name(), "ExternalBufferGroup.name");
      }
      if (const auto* externals = model->external_buffers()) {
        vector(externals, "Model.external_buffers");
        for (const auto* external : *externals)
          if (table(external, "ExternalBuffer")) string(external->packing(), "ExternalBuffer.packing");
      }
    }
  }

 private:
  template <typename Tensor>
  void walk_tensor(const Tensor* tensor) {
    if (!table(tensor, "Tensor")) return;
    vector(tensor->shape(), "Tensor.shape");
    string(tensor->name(), "Tensor.name");
    if (const auto* q = tensor->quantization(); q && table(q, "QuantizationParameters")) {
      vector(q->min(), "QuantizationParameters.min");
      vector(q->max(), "QuantizationParameters.max");
      vector(q->scale(), "QuantizationParameters.scale");
      vector(q->zero_point(), "QuantizationParameters.zero_point");
    }
    const auto* sparsity = tensor->sparsity();
    if (!sparsity || !table(sparsity, "SparsityParameters")) return;
    vector(sparsity->traversal_order(), "SparsityParameters.traversal_order");
    vector(sparsity->block_map(), "SparsityParameters.block_map");
    const auto* dims = sparsity->dim_metadata();
    if (!dims) return;
    vector(dims, "SparsityParameters.dim_metadata");
    for (const auto* dim : *dims) {
      if (!table(dim, "DimensionMetadata")) continue;
      index_vector(dim->array_segments_as_Int32Vector());
      index_vector(dim->array_segments_as_Uint16Vector());
      index_vector(dim->array_segments_as_Uint8Vector());
      index_vector(dim->array_indices_as_Int32Vector());
      index_vector(dim->array_indices_as_Uint16Vector());
      index_vector(dim->array_indices_as_Uint8Vector());
    }
  }

  template <typename IndexVector>
  void index_vector(const IndexVector* v) {
    if (v && table(v, "SparseIndexVector")) vector(v->values(), "SparseIndexVector.values");
  }

  // A table's bytes: its vtable, and its inline part — up to its declared size, or past it to
  // any field a (malformed) vtable places further out, with room for the widest scalar.
  bool table(const void* generated, const char* what) {
    if (!generated || !seen_.insert(generated).second) return false;
    const auto* t = static_cast<const std::uint8_t*>(generated);
    cover(t, sizeof(flatbuffers::soffset_t), what);
    const std::uint8_t* vtable = static_cast<const flatbuffers::Table*>(generated)->GetVTable();
    cover(vtable, sizeof(flatbuffers::voffset_t), what);
    const auto vtable_size = flatbuffers::ReadScalar<flatbuffers::voffset_t>(vtable);
    cover(vtable, std::max<std::uint64_t>(vtable_size, 2 * sizeof(flatbuffers::voffset_t)), what);
    const std::uint64_t inline_size =
        vtable_size >= 4 ? flatbuffers::ReadScalar<flatbuffers::voffset_t>(vtable + sizeof(flatbuffers::voffset_t)) : 0;
    std::uint64_t end = std::max<std::uint64_t>(inline_size, sizeof(flatbuffers::soffset_t));
    for (std::uint64_t at = 4; at + 2 <= vtable_size; at += 2) {
      const std::uint64_t field = flatbuffers::ReadScalar<flatbuffers::voffset_t>(vtable + at);
      if (field != 0 && field >= inline_size) end = std::max(end, field + 8);
    }
    cover(t, end, what);
    return true;
  }
  template <typename T>
  void vector(const flatbuffers::Vector<T>* v, const char* what) {
    if (v) cover(v, sizeof(flatbuffers::uoffset_t) + std::uint64_t{v->size()} * sizeof(T), what);
  }
  void string(const flatbuffers::String* s, const char* what) {
    if (s) cover(s, sizeof(flatbuffers::uoffset_t) + std::uint64_t{s->size()} + 1, what);
  }

  void cover(const void* p, std::uint64_t n, const char* what) const {
    const auto begin = static_cast<std::uint64_t>(static_cast<const std::uint8_t*>(p) - base_);
    const auto& unread = input_.unread;
    // The first unread range ending after `begin`: the only one that may overlap [begin, begin + n).
    const auto it = std::upper_bound(unread.begin(), unread.end(), begin,
                                     [](std::uint64_t v, const auto& range) { return v < range.second; });
    if (it == unread.end() || it->first >= begin + n) return;
    fail(ErrorCode::bad_input, input_.source.path.string(), ": the flatbuffer's ", what, " at offset ", begin,
         " lies inside the data of a buffer (bytes [", it->first, ", ", it->second,
         ")): one byte would be both tensor data and a table; lwload refuses the two readings");
  }

  const TfliteInput& input_;
  const std::uint8_t* base_;
  std::uint64_t threshold_;
  std::unordered_set<const void*> seen_;
};

}  // namespace

void check_tables_outside_payloads(const TfliteInput& input, TfliteFlavor flavor, std::uint64_t payload_threshold) {
  if (input.unread.empty()) return;
  const auto* base = input.flatbuffer.data();
  if (flavor == TfliteFlavor::circle)
    TableCover<fb::circle::Model>(input, payload_threshold).run(flatbuffers::GetRoot<fb::circle::Model>(base));
  else TableCover<fb::tflite::Model>(input, payload_threshold).run(flatbuffers::GetRoot<fb::tflite::Model>(base));
}

}  // namespace lwload::formats
