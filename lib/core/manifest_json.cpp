// Manifest → JSON with Boost.JSON, the single serializer behind `inspect --json` and the tests.
#include "lwload/manifest_json.hpp"

#include <boost/json.hpp>

namespace lwload {
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

boost::json::value quantization_to_json(const std::optional<Quantization>& q) {
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

}  // namespace

std::string manifest_to_json(const Manifest& manifest, bool with_metadata) {
  boost::json::object root;
  root["format"] = manifest.format;
  boost::json::array files;
  for (const auto& f : manifest.files) files.emplace_back(f.string());
  root["files"] = std::move(files);
  root["total_bytes"] = manifest.total_bytes();
  boost::json::array tensors;
  tensors.reserve(manifest.tensors.size());
  for (const auto& t : manifest.tensors) {
    boost::json::object obj;
    obj["name"] = t.name;
    obj["dtype"] = dtype_name(t.dtype);
    obj["shape"] = boost::json::value_from(t.shape);
    obj["bytes"] = t.bytes;
    boost::json::array pieces;
    if (t.encoding == Encoding::raw) {
      for (const auto& p : t.pieces)
        pieces.push_back(boost::json::object{{"file", p.file}, {"offset", p.offset}, {"length", p.length}});
    }
    obj["pieces"] = std::move(pieces);
    obj["quantization"] = quantization_to_json(t.quantization);
    if (t.encoding != Encoding::raw) obj["encoding"] = encoding_name(t.encoding);
    tensors.push_back(std::move(obj));
  }
  root["tensors"] = std::move(tensors);
  if (with_metadata) {
    boost::json::object meta;
    for (const auto& entry : manifest.metadata) meta[entry.key] = meta_to_json(entry.value);
    root["metadata"] = std::move(meta);
  }
  return boost::json::serialize(root);
}

}  // namespace lwload
