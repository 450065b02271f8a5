// Manifest → JSON, the single serializer behind `inspect --json` and the tests: tensors as text
// (core/json_text.hpp), metadata and quantization through Boost.JSON.
#include "lwload/manifest_json.hpp"

#include <boost/json.hpp>
#include <sstream>
#include <string>
#include <string_view>

#include "core/json_text.hpp"

namespace lwload {
using json_text::append_json_string;
using json_text::append_member;
using json_text::append_number;
namespace {

boost::json::value meta_to_json(const MetaValue& meta) {
  return std::visit(
      [](const auto& v) -> boost::json::value {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          return nullptr;
        } else if constexpr (std::is_same_v<T, MetaValue::Array>) {
          boost::json::array out;
          out.reserve(v.size());
          for (const auto& item : v) out.push_back(meta_to_json(item));
          return out;
        } else if constexpr (std::is_same_v<T, std::string>) {
          return boost::json::string(v);
        } else {
          return v;
        }
      },
      meta.value);
}

boost::json::value quantization_to_json(const std::shared_ptr<const Quantization>& q) {
  if (!q) return nullptr;
  boost::json::object out;
  out["scheme"] = q->scheme;
  out["scale"] = boost::json::value_from(q->scale);
  out["zero_point"] = boost::json::value_from(q->zero_point);
  out["min"] = q->min ? boost::json::value(*q->min) : boost::json::value(nullptr);
  out["original_dtype"] = q->original_dtype ? boost::json::value(dtype_name(*q->original_dtype))
                                            : boost::json::value(nullptr);
  out["axis"] = q->axis;
  return out;
}

// The structure of a sparse tensor, by counts: its index arrays can be as large as its values.
boost::json::value sparsity_to_json(const Sparsity& sparsity) {
  boost::json::object out;
  out["traversal_order"] = boost::json::value_from(sparsity.traversal_order);
  out["block_map"] = boost::json::value_from(sparsity.block_map);
  boost::json::array levels;
  for (const auto& level : sparsity.levels) {
    boost::json::object l;
    l["format"] = level.sparse ? "csr" : "dense";
    l["size"] = level.size;
    if (level.sparse) {
      l["segments"] = level.segments.size();
      l["indices"] = level.indices.size();
    }
    levels.push_back(std::move(l));
  }
  out["levels"] = std::move(levels);
  out["stored_values"] = sparsity.stored_values;
  out["dense_bytes"] = sparsity.dense_bytes;
  return out;
}

// One tensor's object, appended as text: a manifest may list a million tensors, and building a
// Boost.JSON object per tensor (hashing its keys) took longer than reading the header. Same
// keys in the same order as a DOM would serialise them.
void append_tensor_json(std::string& out, const TensorInfo& t) {
  out += "{\"name\":";
  append_json_string(out, t.name);
  append_member(out, "dtype", dtype_name(t.dtype));
  out += ",\"shape\":[";
  for (std::size_t i = 0; i < t.shape.size(); ++i) {
    if (i) out += ',';
    append_number(out, t.shape[i]);
  }
  out += ']';
  append_member(out, "bytes", t.bytes);
  out += ",\"pieces\":[";
  if (t.encoding == Encoding::raw) {
    for (std::size_t i = 0; i < t.pieces.size(); ++i) {
      out += i ? ",{\"file\":" : "{\"file\":";
      append_number(out, t.pieces[i].file);
      append_member(out, "offset", t.pieces[i].offset);
      append_member(out, "length", t.pieces[i].length);
      out += '}';
    }
  }
  out += "],\"quantization\":";
  out += t.quantization ? boost::json::serialize(quantization_to_json(t.quantization)) : std::string("null");
  if (t.encoding != Encoding::raw) {
    out += ",\"encoding\":";
    append_json_string(out, encoding_name(t.encoding));
  }
  if (t.sparsity) {
    out += ",\"sparsity\":";
    out += boost::json::serialize(sparsity_to_json(*t.sparsity));
  }
  if (!t.origin.empty()) {
    out += ",\"origin\":";
    append_json_string(out, t.origin);
  }
  out += '}';
}

}  // namespace

void write_manifest_json(std::ostream& out, const Manifest& manifest, bool with_metadata) {
  boost::json::array files;
  for (const auto& f : manifest.files) files.emplace_back(f.string());
  out << "{\"format\":" << boost::json::serialize(boost::json::value(manifest.format))
      << ",\"files\":" << boost::json::serialize(files) << ",\"total_bytes\":" << manifest.total_bytes()
      << ",\"tensors\":[";
  std::string buffer;  // written out every 64 KiB
  buffer.reserve(80 * 1024);
  for (std::size_t i = 0; i < manifest.tensors.size(); ++i) {
    if (i) buffer += ',';
    append_tensor_json(buffer, manifest.tensors[i]);
    if (buffer.size() >= 64 * 1024) {
      out.write(buffer.data(), static_cast<std::streamsize>(buffer.size()));
      buffer.clear();
    }
  }
  buffer += ']';
  out.write(buffer.data(), static_cast<std::streamsize>(buffer.size()));
  if (with_metadata) {
    boost::json::object meta;
    for (const auto& entry : manifest.metadata) meta[entry.key] = meta_to_json(entry.value);
    out << ",\"metadata\":" << boost::json::serialize(meta);
  }
  out << '}';
}

std::string manifest_to_json(const Manifest& manifest, bool with_metadata) {
  std::ostringstream out;
  write_manifest_json(out, manifest, with_metadata);
  return std::move(out).str();
}

}  // namespace lwload
