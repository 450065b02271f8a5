// Weightless ONNX graphs (lwload/onnx.hpp): the model's ModelProto written again with chosen
// constants' bytes replaced by an external_data reference. One walk of the protobuf wire scanner
// over the messages that can hold a TensorProto — ModelProto.graph and .functions, GraphProto's
// nodes and initializers, NodeProto's attributes, AttributeProto's t / tensors / g / graphs —
// copying every other field byte for byte. A TensorProto is matched to its manifest tensor by
// where its bytes are (the manifest's first piece: raw_data's payload, the first typed field, or
// external_data's file and offset; shifted by OpenedFile::offset for a model inside a larger file),
// so the reader's naming (repeats get "#2") needs no second copy.
#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "formats/format.hpp"
#include "formats/onnx/protobuf_onnx.hpp"
#include "formats/onnx/protobuf_wire.hpp"
#include "lwload/error.hpp"
#include "lwload/onnx.hpp"

namespace lwload {
namespace {

using formats::protobuf::Field;
using formats::protobuf::MessageScanner;
using formats::protobuf::WindowedReader;
using formats::protobuf::WireType;
namespace ff = formats::onnx;
namespace tf = formats::onnx::tensor_field;

void put_varint(std::string& out, std::uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

void put_tag(std::string& out, std::uint32_t number, WireType wire) {
  put_varint(out, (std::uint64_t{number} << 3) | static_cast<std::uint64_t>(wire));
}

void put_bytes(std::string& out, std::uint32_t number, std::string_view bytes) {
  put_tag(out, number, WireType::length_delimited);
  put_varint(out, bytes.size());
  out.append(bytes);
}

std::string entry(std::string_view key, std::string_view value) {
  std::string e;
  put_bytes(e, ff::entry_field::key, key);
  put_bytes(e, ff::entry_field::value, value);
  return e;
}

bool is_data_field(std::uint32_t number) {
  switch (number) {
    case tf::raw_data:
    case tf::float_data:
    case tf::int32_data:
    case tf::int64_data:
    case tf::double_data:
    case tf::uint64_data:
    case tf::external_data:
    case tf::data_location: return true;
    default: return false;
  }
}

class Walk {
 public:
  using Locate = std::function<std::optional<DataReference>(const OnnxConstant&)>;

  Walk(const Manifest& manifest, const Locate* locate) : manifest_(manifest), locate_(locate) {
    if (manifest.format != "onnx" || manifest.files.empty())
      fail(ErrorCode::usage, "weightless graphs are for ONNX models; this manifest is ", manifest.format);
    // The model file as its reader saw it (offsets from the model's first byte): through the
    // manifest's file system, which serves a model inside a larger file as a window of it.
    std::shared_ptr<FileSystem> fs = manifest.file_system ? manifest.file_system : posix_file_system();
    file_ = fs->open(manifest.files[0]);
    for (const OpenedFile& opened : manifest.opened) shift_.push_back(opened.offset);
    shift_.resize(manifest.files.size(), 0);
    source_ = std::make_unique<WindowedReader>(*file_);
    for (std::size_t i = 0; i < manifest.tensors.size(); ++i) {
      const TensorInfo& t = manifest.tensors[i];
      if (!t.pieces.empty()) by_piece_.emplace(std::pair{t.pieces[0].file, t.pieces[0].offset}, i);
    }
  }

  WeightlessGraph run() {
    out_.model = model(MessageScanner(*source_, 0, source_->size(), "ModelProto"));
    return std::move(out_);
  }

 private:
  struct Scope {
    bool in_function = false;
    bool in_subgraph = false;
  };

  // Bytes of the file, for the graph being written; none when only the constants are listed
  // (onnx_constants), so listing a model reads its headers alone, never a kept tensor's data.
  std::string copy(std::uint64_t begin, std::uint64_t end) {
    if (!locate_) return {};
    std::string bytes(end - begin, '\0');
    file_->read_exact(begin, std::as_writable_bytes(std::span(bytes)), "ONNX header bytes");
    return bytes;
  }
  std::string copy_field(const MessageScanner& s) { return copy(s.field().tag_offset, s.field().end); }

  std::string model(MessageScanner s) {
    std::string out;
    while (s.next()) {
      const Field& f = s.field();
      if (f.number == ff::model_field::graph && f.wire == WireType::length_delimited)
        put_bytes(out, f.number, graph(s.nested("graph"), Scope{}));
      else if (f.number == ff::model_field::functions && f.wire == WireType::length_delimited)
        put_bytes(out, f.number, function(s.nested("function")));
      else out += copy_field(s);
    }
    return out;
  }

  std::string function(MessageScanner s) {
    std::string out;
    while (s.next()) {
      const Field& f = s.field();
      if (f.number == ff::function_field::node && f.wire == WireType::length_delimited)
        put_bytes(out, f.number, node(s.nested("node"), Scope{true, false}));
      else out += copy_field(s);
    }
    return out;
  }

  std::string graph(MessageScanner s, Scope scope) {
    std::string out;
    while (s.next()) {
      const Field& f = s.field();
      if (f.wire != WireType::length_delimited) {
        out += copy_field(s);
      } else if (f.number == ff::graph_field::node) {
        put_bytes(out, f.number, node(s.nested("node"), scope));
      } else if (f.number == ff::graph_field::initializer) {
        OnnxConstant c{0, OnnxConstant::Kind::initializer, {}, scope.in_function, scope.in_subgraph};
        put_bytes(out, f.number, tensor(s.nested("initializer"), c, true));
      } else {
        out += copy_field(s);  // sparse_initializer, inputs, outputs, value_info, ...
      }
    }
    return out;
  }

  // A node's attributes are written once its op_type, domain and first output are known (protobuf
  // does not promise they come first), so a Constant's `value` is named by its output.
  std::string node(MessageScanner s, Scope scope) {
    std::string op_type, domain, output;
    bool has_output = false;
    {
      MessageScanner look = s;
      while (look.next()) {
        const std::uint32_t n = look.field().number;
        if (n == ff::node_field::op_type) op_type = look.read_string("op_type", 1u << 16);
        if (n == ff::node_field::domain) domain = look.read_string("domain", 1u << 16);
        if (n == ff::node_field::output && !has_output) {
          output = look.read_string("output", 1u << 16);
          has_output = true;
        }
      }
    }
    const bool constant = op_type == "Constant" && (domain.empty() || domain == "ai.onnx");
    std::string out;
    while (s.next()) {
      const Field& f = s.field();
      if (f.number == ff::node_field::attribute && f.wire == WireType::length_delimited)
        put_bytes(out, f.number, attribute(s.nested("attribute"), scope, constant ? &output : nullptr));
      else out += copy_field(s);
    }
    return out;
  }

  std::string attribute(MessageScanner s, Scope scope, const std::string* constant_output) {
    std::string name;
    {
      MessageScanner look = s;
      while (look.next())
        if (look.field().number == ff::attribute_field::name) name = look.read_string("name", 1u << 16);
    }
    namespace af = ff::attribute_field;
    std::string out;
    while (s.next()) {
      const Field& f = s.field();
      if (f.wire != WireType::length_delimited) {
        out += copy_field(s);
      } else if (f.number == af::t || f.number == af::tensors) {
        OnnxConstant c{0, OnnxConstant::Kind::attribute, {}, scope.in_function, scope.in_subgraph};
        if (constant_output && f.number == af::t && name == "value") {
          c.kind = OnnxConstant::Kind::constant_node;
          c.name = *constant_output;
        }
        put_bytes(out, f.number, tensor(s.nested("tensor"), c, false));
      } else if (f.number == af::g || f.number == af::graphs) {
        put_bytes(out, f.number, graph(s.nested("graph"), Scope{scope.in_function, true}));
      } else {
        out += copy_field(s);
      }
    }
    return out;
  }

  // The manifest tensor whose bytes the TensorProto holds, matched by where they are.
  std::optional<std::size_t> match(MessageScanner s) {
    std::optional<std::pair<std::uint32_t, std::uint64_t>> raw, typed_tag, typed_payload;
    std::string location;
    std::uint64_t offset = 0;
    bool external = false;
    while (s.next()) {
      const Field& f = s.field();
      switch (f.number) {
        case tf::raw_data:
          if (f.wire == WireType::length_delimited) raw = {0, shift_[0] + f.offset};  // protobuf keeps the last
          break;
        case tf::float_data:
        case tf::int32_data:
        case tf::int64_data:
        case tf::double_data:
        case tf::uint64_data:
          if (!typed_tag) typed_tag = {0, shift_[0] + f.tag_offset};
          if (!typed_payload && f.wire == WireType::length_delimited) typed_payload = {0, shift_[0] + f.offset};
          break;
        case tf::external_data: {
          external = true;
          MessageScanner e = s.nested("external_data");
          std::string key, value;
          while (e.next()) {
            if (e.field().number == ff::entry_field::key) key = e.read_string("key", 4096);
            if (e.field().number == ff::entry_field::value) value = e.read_string("value", 4096);
          }
          if (key == "location") location = value;
          if (key == "offset") offset = std::strtoull(value.c_str(), nullptr, 10);
          break;
        }
        default: break;
      }
    }
    auto find = [&](const std::optional<std::pair<std::uint32_t, std::uint64_t>>& key) -> std::optional<std::size_t> {
      if (!key) return std::nullopt;
      const auto it = by_piece_.find(*key);
      if (it == by_piece_.end()) return std::nullopt;
      return it->second;
    };
    if (external) {
      const std::filesystem::path& model = manifest_.files[0];
      const std::filesystem::path path =
          formats::resolve_inside(model.parent_path(), location, model, "external_data location");
      const auto at = std::find(manifest_.files.begin(), manifest_.files.end(), path);
      if (at == manifest_.files.end()) return std::nullopt;
      const auto index = static_cast<std::uint32_t>(at - manifest_.files.begin());
      return find(std::pair{index, shift_[index] + offset});
    }
    if (auto i = find(raw)) return i;
    if (auto i = find(typed_tag)) return i;
    return find(typed_payload);
  }

  std::string tensor(MessageScanner s, OnnxConstant c, bool initializer) {
    const std::optional<std::size_t> index = match(s);
    std::optional<DataReference> where;
    if (index) {
      c.tensor = *index;
      if (initializer) {
        MessageScanner look = s;
        while (look.next())
          if (look.field().number == tf::name) c.name = look.read_string("name", 1u << 16);
      }
      if (locate_) where = (*locate_)(c);
      out_.constants.push_back(c);
      if (where) out_.left_out.push_back(out_.constants.size() - 1);
    }
    if (!where) return copy(s.begin(), s.end());
    std::string out;
    while (s.next())
      if (!is_data_field(s.field().number)) out += copy_field(s);
    put_tag(out, tf::data_location, WireType::varint);
    put_varint(out, ff::kDataLocationExternal);
    put_bytes(out, tf::external_data, entry("location", where->location));
    put_bytes(out, tf::external_data, entry("offset", std::to_string(where->offset)));
    put_bytes(out, tf::external_data, entry("length", std::to_string(manifest_.tensors[*index].bytes)));
    return out;
  }

  const Manifest& manifest_;
  const Locate* locate_;
  std::shared_ptr<const RandomAccessFile> file_;
  std::vector<std::uint64_t> shift_;  // per manifest file: OpenedFile::offset (pieces count from there)
  std::unique_ptr<WindowedReader> source_;
  std::map<std::pair<std::uint32_t, std::uint64_t>, std::size_t> by_piece_;
  WeightlessGraph out_;
};

}  // namespace

std::vector<OnnxConstant> onnx_constants(const Manifest& manifest) { return Walk(manifest, nullptr).run().constants; }

WeightlessGraph onnx_weightless_graph(const Manifest& manifest,
                                      const std::function<std::optional<DataReference>(const OnnxConstant&)>& locate) {
  return Walk(manifest, &locate).run();
}

}  // namespace lwload
