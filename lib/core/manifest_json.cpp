// Manifest → JSON with Boost.JSON, the single serializer behind `inspect --json` and the tests.
#include "lwload/manifest_json.hpp"

#include <boost/json.hpp>
#include <sstream>

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


// One tensor's object. Built and serialised one at a time: a DOM of the whole manifest would cost
// hundreds of bytes per tensor (~1 GiB for a header that lists a million tensors).
boost::json::object tensor_to_json(const TensorInfo& t) {
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
  return obj;
}

}  // namespace

void write_manifest_json(std::ostream& out, const Manifest& manifest, bool with_metadata) {
  boost::json::array files;
  for (const auto& f : manifest.files) files.emplace_back(f.string());
  out << "{\"format\":" << boost::json::serialize(boost::json::value(manifest.format))
      << ",\"files\":" << boost::json::serialize(files) << ",\"total_bytes\":" << manifest.total_bytes()
      << ",\"tensors\":[";
  for (std::size_t i = 0; i < manifest.tensors.size(); ++i)
    out << (i ? "," : "") << boost::json::serialize(tensor_to_json(manifest.tensors[i]));
  out << ']';
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
