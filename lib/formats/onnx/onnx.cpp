// The ONNX reader: one pass of the protobuf wire scanner over ModelProto, reporting every constant
// tensor the model holds and where its bytes lie, without reading them. Constants live in:
//   - graph initializers and sparse_initializers, in the main graph and in every subgraph (If
//     then/else, Loop and Scan bodies: GRAPH and GRAPHS attributes, nested), and in model-local
//     functions;
//   - `Constant` nodes (paddle2onnx, spox, OpenVINO and older PyTorch exports keep weights there):
//     `value` (a TensorProto), `value_float(s)`, `value_int(s)`, `value_string(s)`, `sparse_value`,
//     named by the node's output; and TENSOR / SPARSE_TENSOR attributes of other nodes
//     (ConstantOfShape's fill value), named "<node>.<attribute>".
// A sparse tensor becomes two tensors, "<name>.values" and "<name>.indices" (its dense shape in
// the metadata as "sparse.<name>.dims"). Names stay unique (a repeat gets "#2", "#3"); each
// tensor's `origin` says where it came from. Data:
//   - raw_data inline → one piece of the .onnx file at the payload's absolute offset;
//   - external data → one piece of the file `location` names (relative to the model's folder);
//   - packed float_data / double_data of FLOAT, COMPLEX64, DOUBLE, COMPLEX128 → raw pieces (they
//     are the little-endian elements already);
//   - other typed fields (int32_data, int64_data, uint64_data, unpacked floats) → Encoding
//     onnx_varint / onnx_fixed whose pieces are the complete protobuf fields (tags included), so
//     decode_tensor (onnx_decode.cpp) can parse packed and unpacked runs alike at load time;
//   - STRING tensors → dtype STRING, no pieces (not device-loadable).
// An initializer without any data is an error unless its shape has zero elements (then it is an
// empty tensor with no pieces): ONNX has no "uninitialised" initializer.
#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "formats/onnx/onnx.hpp"
#include "formats/header_reader.hpp"
#include "formats/name_set.hpp"
#include "formats/onnx/protobuf_onnx.hpp"
#include "formats/onnx/protobuf_wire.hpp"
#include "formats/varint.hpp"
#include "lwload/error.hpp"

namespace lwload::formats {
namespace {

using protobuf::Field;
using protobuf::MessageScanner;
using protobuf::WireType;
namespace tf = onnx::tensor_field;

constexpr int kMaxGraphDepth = 64;           // If/Loop bodies nested deeper than this are refused
constexpr std::size_t kMaxPieces = 1 << 20;  // per tensor; only hostile files split data this much
constexpr std::uint64_t kMaxName = 64 * 1024;

// A name as a tensor's origin quotes it: whole up to 64 bytes, else its start and its length. Origins
// are per tensor, and the places they name (a function, a subgraph, a node) are shared by thousands
// of tensors: quoting a 64 KiB name whole in each would cost gigabytes from a small file.
std::string brief(std::string_view name) {
  constexpr std::size_t kWhole = 64, kStart = 48;
  if (name.size() <= kWhole) return std::string(name);
  std::size_t cut = kStart;
  while (cut > 0 && (static_cast<unsigned char>(name[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 sequence
  return std::string(name.substr(0, cut)) + "... (" + std::to_string(name.size()) + " bytes)";
}
const std::filesystem::path kFolderModel = "model.onnx";

// ONNX TensorProto.DataType → the stored dtype.
DType dtype_from_onnx(std::int64_t code, const std::filesystem::path& file, std::string_view tensor,
                      std::uint64_t offset) {
  switch (code) {
    case 1: return DType::F32;
    case 2: return DType::U8;
    case 3: return DType::I8;
    case 4: return DType::U16;
    case 5: return DType::I16;
    case 6: return DType::I32;
    case 7: return DType::I64;
    case 8: return DType::STRING;
    case 9: return DType::BOOL;
    case 10: return DType::F16;
    case 11: return DType::F64;
    case 12: return DType::U32;
    case 13: return DType::U64;
    case 14: return DType::C64;
    case 15: return DType::C128;
    case 16: return DType::BF16;
    case 17: return DType::F8_E4M3;
    case 19: return DType::F8_E5M2;
    case 22: return DType::I4;
    default: break;
  }
  const char* unsupported = code == 18   ? "FLOAT8E4M3FNUZ"
                            : code == 20 ? "FLOAT8E5M2FNUZ"
                            : code == 21 ? "UINT4"
                            : code == 23 ? "FLOAT4E2M1"
                                         : nullptr;
  if (unsupported)
    fail(ErrorCode::unsupported, file.string(), ": tensor '", tensor, "': field data_type at offset ", offset,
         ": ONNX type ", code, " (", unsupported, ") has no lwload dtype");
  fail(ErrorCode::bad_input, file.string(), ": tensor '", tensor, "': field data_type at offset ", offset, ": ", code,
       " is not an ONNX data type");
}

// Byte ranges of the .onnx file, merged when one starts where the previous ended.
struct Ranges {
  std::vector<Piece> pieces;
  std::uint64_t total = 0;
  void add(std::uint64_t offset, std::uint64_t length) {
    total += length;
    if (length == 0) return;
    if (!pieces.empty() && pieces.back().offset + pieces.back().length == offset) pieces.back().length += length;
    else pieces.push_back(Piece{0, offset, length});
  }
};

// One typed *_data field of a TensorProto (it may occur many times: packed runs or single
// unpacked elements).
struct TypedRecord {
  Ranges whole;             // complete fields, tags included: what decode_tensor parses
  Ranges payload;           // packed payloads of fixed-width fields: raw elements
  bool unpacked = false;    // some element was written as a single tagged scalar
  std::uint64_t first = 0;  // offset of the first occurrence (for errors)
};

// What a TensorProto says, gathered first and interpreted once its name (field 8, written after
// dims and data_type) is known, so errors can name the tensor.
struct TensorFields {
  std::string_view where;  // position in the model, for errors before the name is known (the
                           // context of the scanner the fields come from, which outlives this)
  std::string name;
  bool named = false;
  // The dims in place (no allocation per tensor), and where the first negative one lies.
  std::array<std::int64_t, kMaxRank> dims;
  std::size_t rank = 0;
  std::optional<std::pair<std::size_t, std::uint64_t>> negative;  // (dimension, offset)
  std::optional<std::int64_t> data_type;
  std::uint64_t data_type_offset = 0;
  std::optional<Field> raw_data;
  std::map<std::uint32_t, TypedRecord> typed;  // by field number
  std::optional<std::uint64_t> string_data;    // offset of the first string_data field
  std::vector<std::pair<std::string, std::string>> external;
  std::uint64_t external_offset = 0;
  std::uint64_t data_location = 0;
  std::uint64_t data_location_offset = 0;
  std::optional<std::uint64_t> segment;
};

std::optional<std::uint64_t> parse_decimal(std::string_view text) {
  std::uint64_t value = 0;
  if (text.empty()) return std::nullopt;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

class OnnxScan {
 public:
  OnnxScan(FileSystem& fs, std::filesystem::path file, const HeaderLimits& limits)
      : fs_(fs),
        file_(std::move(file)),
        caps_(limits),
        handle_(fs_.open(file_)),
        source_(std::make_unique<protobuf::WindowedReader>(*handle_)),
        id_mask_(id_mask(limits.max_tensors)),
        names_(id_mask_) {
    manifest_.format = "onnx";
    manifest_.files.push_back(file_);
  }

  Manifest run() {
    MessageScanner model(*source_, 0, source_->size(), "ModelProto", onnx::model_field_name);
    bool has_graph = false;
    while (model.next()) {
      const Field& f = model.field();
      namespace mf = onnx::model_field;
      switch (f.number) {
        case mf::ir_version:
          model.expect(WireType::varint, "ir_version");
          meta("ir_version", static_cast<std::int64_t>(f.value));
          break;
        case mf::producer_name: meta("producer_name", model.read_string("producer_name")); break;
        case mf::producer_version: meta("producer_version", model.read_string("producer_version")); break;
        case mf::domain: meta("domain", model.read_string("domain")); break;
        case mf::model_version:
          model.expect(WireType::varint, "model_version");
          meta("model_version", static_cast<std::int64_t>(f.value));
          break;
        case mf::graph:
          model.expect(WireType::length_delimited, "graph");
          has_graph = true;
          scan_graph(model.nested("graph", onnx::graph_field_name), 1);
          break;
        case mf::opset_import:
          model.expect(WireType::length_delimited, "opset_import");
          scan_opset(model.nested("opset_import", onnx::opset_field_name));
          break;
        case mf::metadata_props:
          model.expect(WireType::length_delimited, "metadata_props");
          scan_metadata_prop(model.nested("metadata_props", onnx::entry_field_name));
          break;
        case mf::functions:
          model.expect(WireType::length_delimited, "functions");
          scan_function(model.nested("function #" + std::to_string(functions_++), onnx::function_field_name));
          break;
        default: break;  // doc_string, training_info, ...: nothing to load
      }
    }
    if (!has_graph)
      fail(ErrorCode::bad_input, file_.string(),
           ": ModelProto has no graph (field 7): not an ONNX model, or an empty one");
    return std::move(manifest_);
  }

 private:
  template <typename T>
  void meta(std::string key, T value) {
    manifest_.metadata.push_back(MetaEntry{std::move(key), MetaValue{std::move(value)}});
  }

  void scan_opset(MessageScanner opset) {
    std::string domain;
    std::int64_t version = 0;
    while (opset.next()) {
      if (opset.field().number == onnx::opset_field::domain) domain = opset.read_string("domain");
      if (opset.field().number == onnx::opset_field::version) {
        opset.expect(WireType::varint, "version");
        version = static_cast<std::int64_t>(opset.field().value);
      }
    }
    meta("opset." + (domain.empty() ? std::string("ai.onnx") : domain), version);
  }

  void scan_metadata_prop(MessageScanner entry) {
    std::string key, value;
    while (entry.next()) {
      if (entry.field().number == onnx::entry_field::key) key = entry.read_string("key");
      if (entry.field().number == onnx::entry_field::value) value = entry.read_string("value");
    }
    meta(std::move(key), std::move(value));
  }

  // `depth` counts graphs: the main graph is 1, an If body inside it 2, ...
  // `where` says which graph this is for tensors' origins (the graph's own name comes after its
  // nodes in the file, so the attribute holding it names it instead).
  void scan_graph(MessageScanner graph, int depth, const std::string& where = "the main graph") {
    if (depth > kMaxGraphDepth)
      source_->fail_at(graph.begin(), graph.context(), "subgraphs nested more than ", kMaxGraphDepth, " deep");
    std::uint64_t nodes = 0, initializers = 0, sparse = 0;
    // The onnx checker refuses a graph whose initializers and sparse_initializers repeat a name
    // (as the file gives it). A name given again was taken when it came, so its tensor was renamed
    // ("w#2"): only then are this graph's initializers indexed by name, from `runs` (a million
    // initializers of distinct names cost no index). `file_names` keeps the names the file gave
    // tensors that were renamed.
    std::vector<std::pair<std::uint32_t, std::uint32_t>> runs;  // [first, last] positions
    std::unordered_map<std::uint32_t, std::string> file_names;
    NameSet initializer_names(id_mask_);
    bool indexed = false;
    const auto file_name = [&](std::uint32_t position) -> std::string_view {
      const auto it = file_names.find(position);
      return it != file_names.end() ? std::string_view(it->second) : std::string_view(manifest_.tensors[position].name);
    };
    // `taken`: `name` was taken when the initializer came (its tensor was named otherwise).
    // `field` and `index` name the initializer in the error ("initializer", 3: written only then).
    const auto unique_initializer = [&](std::size_t position, const std::string& name, bool taken,
                                        std::string_view field, std::uint64_t index) {
      const auto id = static_cast<std::uint32_t>(position);
      if (taken && !indexed) {
        for (const auto& [first, last] : runs)
          for (std::uint32_t p = first; p <= last; ++p) initializer_names.insert(p, file_name);
        indexed = true;
      }
      if (indexed && initializer_names.contains(name, file_name))
        fail(ErrorCode::bad_input, file_.string(), ": ", graph.context(), " ", field, " #", index,
             ": initializer name '", name,
             "' is not unique in its graph (the onnx checker refuses it; which one a runtime uses is undefined)");
      if (manifest_.tensors[position].name != name) file_names.emplace(id, name);
      if (indexed) initializer_names.insert(id, file_name);
      if (!runs.empty() && runs.back().second + 1 == id) runs.back().second = id;
      else runs.emplace_back(id, id);
    };
    while (graph.next()) {
      const std::uint32_t number = graph.field().number;
      if (number == onnx::graph_field::node) {
        graph.expect(WireType::length_delimited, "node");
        scan_node(graph.nested(graph.context() + " node #" + std::to_string(nodes++), onnx::node_field_name), depth,
                  where);
      } else if (number == onnx::graph_field::initializer) {
        graph.expect(WireType::length_delimited, "initializer");
        const std::uint64_t index = initializers++;
        const std::size_t position = manifest_.tensors.size();
        const std::string name = scan_initializer(
            graph.nested(graph.context() + " initializer #" + std::to_string(index), onnx::tensor_field_name), {},
            depth == 1 ? std::string() : "initializer of " + where);
        unique_initializer(position, name, manifest_.tensors[position].name != name, "initializer", index);
      } else if (number == onnx::graph_field::sparse_initializer) {
        graph.expect(WireType::length_delimited, "sparse_initializer");
        const std::uint64_t index = sparse++;
        const std::size_t position = manifest_.tensors.size();  // its values, named "<name>.values"
        const std::string name = scan_sparse(
            graph.nested(graph.context() + " sparse_initializer #" + std::to_string(index), onnx::sparse_field_name),
            {}, "sparse_initializer of " + where);
        unique_initializer(position, name, manifest_.tensors[position].name != name + ".values", "sparse_initializer",
                           index);
      }
    }
  }

  // A model-local function: its nodes may hold Constants like a graph's.
  void scan_function(MessageScanner function) {
    std::string where = "a model-local function";
    std::uint64_t nodes = 0;
    while (function.next()) {
      const std::uint32_t number = function.field().number;
      if (number == onnx::function_field::name) {
        where = "function '" + brief(function.read_string("name", kMaxName)) + "'";
      } else if (number == onnx::function_field::node) {
        function.expect(WireType::length_delimited, "node");
        scan_node(function.nested(function.context() + " node #" + std::to_string(nodes++), onnx::node_field_name), 1,
                  where);
      }
    }
  }

  // A data-bearing attribute of a node, kept until the node's op_type and outputs are known (writers
  // put them first, but protobuf does not promise it).
  struct DataAttribute {
    std::string name;
    std::uint32_t field = 0;  // attribute_field::t, f, i, floats, ints, s, strings, sparse_tensor, ...
    WireType wire = WireType::varint;
    std::uint64_t begin = 0;  // the payload (messages, packed runs) or the value (scalars)
    std::uint64_t end = 0;
    std::uint64_t tag_offset = 0;
    std::uint64_t field_end = 0;  // just past the whole field, tag included
  };

  // A node's subgraphs are named in errors by the node alone ("node #2 'cond' (If) attribute
  // 'then_branch' (subgraph depth 2)"), not by the whole path, so messages stay short however deep.
  void scan_node(MessageScanner node, int depth, const std::string& where) {
    const std::string& context = node.context();
    // "node #i", then " 'name' (op)" when those fields precede the attributes (as writers do).
    std::string label = context.substr(context.rfind("node #"));
    std::string node_name, op_type, domain, output;
    bool has_output = false;
    std::vector<DataAttribute> data;
    while (node.next()) {
      const std::uint32_t number = node.field().number;
      if (number == onnx::node_field::output) {
        std::string name = node.read_string("output", kMaxName);
        if (!has_output) output = std::move(name);
        has_output = true;
      } else if (number == onnx::node_field::name) {
        node_name = node.read_string("name", kMaxName);
        label += " '" + brief(node_name) + "'";  // brief: the label is the context of all the node holds
      } else if (number == onnx::node_field::op_type) {
        op_type = node.read_string("op_type", kMaxName);
        label += " (" + brief(op_type) + ")";
      } else if (number == onnx::node_field::domain) {
        domain = node.read_string("domain", kMaxName);
      } else if (number == onnx::node_field::attribute) {
        node.expect(WireType::length_delimited, "attribute");
        scan_attribute(node.nested(label + " attribute", onnx::attribute_field_name), depth, label, data);
      }
    }
    if (data.empty()) return;
    const bool constant = op_type == "Constant" && (domain.empty() || domain == "ai.onnx");
    const std::string node_words = node_name.empty() ? "an unnamed node" : "node '" + brief(node_name) + "'";
    if (constant) {
      if (!has_output || output.empty())
        source_->fail_at(node.begin(), label, ": a Constant node without an output to name its value");
      if (data.size() != 1)
        source_->fail_at(node.begin(), label, ": a Constant node with ", data.size(),
                         " value attributes (ONNX allows exactly one)");
      add_constant(data.front(), output, str("Constant node '", brief(output), "' in ", where), label);
      return;
    }
    // Tensor-valued attributes of other operators (ConstantOfShape's value, custom ops' weights).
    const std::string base = !node_name.empty() ? node_name : has_output ? output : label;
    namespace af = onnx::attribute_field;
    for (const DataAttribute& a : data)
      if (a.field == af::t || a.field == af::tensors || a.field == af::sparse_tensor || a.field == af::sparse_tensors)
        add_constant(a, base + "." + a.name,
                     str("attribute '", brief(a.name), "' of ", node_words, " (", brief(op_type), ") in ", where),
                     label);
  }

  // Subgraph-valued attributes (If then/else_branch, Loop/Scan body) are walked at once; data
  // attributes are noted for scan_node.
  void scan_attribute(MessageScanner attribute, int depth, const std::string& label, std::vector<DataAttribute>& data) {
    namespace af = onnx::attribute_field;
    std::string name;
    std::vector<DataAttribute> found;
    std::optional<std::uint64_t> type;
    std::uint64_t type_offset = 0;
    std::vector<std::uint32_t> value_fields;  // the value fields present (the checker's "used fields")
    const auto used = [&](std::uint32_t number) {
      if (std::find(value_fields.begin(), value_fields.end(), number) == value_fields.end())
        value_fields.push_back(number);
    };
    while (attribute.next()) {
      const Field& f = attribute.field();
      // Repeated scalars written packed count when they hold an element (an empty run is no value).
      const bool has_value =
          !((f.number == af::floats || f.number == af::ints) && f.wire == WireType::length_delimited && f.length == 0);
      if (af::attribute_type_for(f.number) != 0 && has_value) used(f.number);
      switch (f.number) {
        case af::name: name = attribute.read_string("name", kMaxName); break;
        case af::type:
          attribute.expect(WireType::varint, "type");
          type = f.value;
          type_offset = f.tag_offset;
          break;
        case af::g:
        case af::graphs:
          attribute.expect(WireType::length_delimited, f.number == af::g ? "g" : "graphs");
          scan_graph(attribute.nested(str(attribute.context(), " '", brief(name), "' (subgraph depth ", depth + 1, ")"),
                                      onnx::graph_field_name),
                     depth + 1, str("the '", brief(name), "' graph of ", brief(label)));
          break;
        case af::t:
        case af::tensors:
        case af::sparse_tensor:
        case af::sparse_tensors:
        case af::s:
        case af::strings:
          attribute.expect(WireType::length_delimited, onnx::attribute_field_name(f.number));
          found.push_back({{}, f.number, f.wire, f.offset, f.offset + f.length, f.tag_offset, f.end});
          break;
        case af::f:
        case af::i:
        case af::floats:
        case af::ints: found.push_back({{}, f.number, f.wire, f.value_offset, f.end, f.tag_offset, f.end}); break;
        default: break;  // doc_string, ref_attr_name, tp, type_protos: no data
      }
    }
    // The onnx checker: at most one value field, and `type` (when present) names it. Readers
    // (onnx.helper.get_attribute_value, the runtimes) choose the field by `type`, so a mismatch
    // would have lwload load a value the model does not use.
    if (value_fields.size() > 1)
      source_->fail_at(attribute.begin(), label, ": attribute '", name, "' holds values in both ",
                       onnx::attribute_field_name(value_fields[0]), " and ",
                       onnx::attribute_field_name(value_fields[1]), " (the onnx checker allows one)");
    if (type && !value_fields.empty() && *type != af::attribute_type_for(value_fields[0]))
      source_->fail_at(type_offset, label, ": attribute '", name, "': field type is ", *type,
                       " but its value is in field ", onnx::attribute_field_name(value_fields[0]), " (type ",
                       af::attribute_type_for(value_fields[0]),
                       "); ONNX reads the field its type names, the onnx checker refuses the mismatch");
    // Only a Constant's scalars and lists are weights; a Conv's `pads` are not. scan_node decides,
    // so keep them all here, merged per attribute (repeated unpacked elements come one field each).
    for (DataAttribute& a : found) {
      a.name = name;
      if (!data.empty() && data.back().name == name && data.back().field == a.field &&
          (a.field == af::floats || a.field == af::ints || a.field == af::strings || a.field == af::tensors ||
           a.field == af::sparse_tensors))
        data.back().field_end = a.field_end;  // one more element of the same list
      else data.push_back(std::move(a));
    }
  }

  // One constant attribute as tensor(s).
  void add_constant(const DataAttribute& a, const std::string& name, const std::string& origin,
                    const std::string& label) {
    namespace af = onnx::attribute_field;
    const std::string context = label + " attribute '" + a.name + "'";
    switch (a.field) {
      case af::t:
        scan_initializer(MessageScanner(*source_, a.begin, a.end, context, onnx::tensor_field_name), name, origin);
        return;
      case af::sparse_tensor:
        scan_sparse(MessageScanner(*source_, a.begin, a.end, context, onnx::sparse_field_name), name, origin);
        return;
      case af::tensors:
      case af::sparse_tensors:
        // Each element is its own field: numbered in the order written.
        scan_list_element(a, name, origin, context);
        return;
      default: break;
    }
    TensorInfo info;
    if (!origin.empty()) info.origin = std::make_shared<const std::string>(origin);
    if (a.field == af::s || a.field == af::strings) {
      info.dtype = DType::STRING;  // reported so the model's constants are complete, never loaded
      info.shape = a.field == af::s ? std::vector<std::int64_t>{} : std::vector<std::int64_t>{-1};
      admit(std::move(info), name, context);
      return;
    }
    const bool floats = a.field == af::f || a.field == af::floats;
    info.dtype = floats ? DType::F32 : DType::I64;
    if (a.field == af::f) {  // value_float: the fixed32 is the tensor's four bytes
      info.bytes = 4;
      info.pieces.push_back(Piece{0, a.begin, 4});
    } else if (a.field == af::floats && a.wire == WireType::length_delimited && a.field_end == a.end) {
      info.shape = {static_cast<std::int64_t>((a.end - a.begin) / 4)};
      if ((a.end - a.begin) % 4 != 0)
        source_->fail_at(a.tag_offset, context, ": packed floats of ", a.end - a.begin, " bytes");
      info.bytes = a.end - a.begin;
      if (info.bytes > 0) info.pieces.push_back(Piece{0, a.begin, info.bytes});
    } else {
      // value_int / value_ints / unpacked value_floats: whole fields, decoded at load time.
      info.encoding = floats ? Encoding::onnx_fixed : Encoding::onnx_varint;
      const std::uint64_t count = a.field == af::i ? 1 : count_elements(a, floats);
      if (a.field != af::i) info.shape = {static_cast<std::int64_t>(count)};
      info.bytes = count * (floats ? 4 : 8);
      info.pieces.push_back(Piece{0, a.tag_offset, a.field_end - a.tag_offset});
    }
    admit(std::move(info), name, context);
  }

  // Elements of a list attribute spread over fields [tag_offset, field_end): packed runs or single
  // tagged values, counted without reading more than their lengths.
  std::uint64_t count_elements(const DataAttribute& a, bool floats) {
    MessageScanner run(*source_, a.tag_offset, a.field_end, "attribute '" + a.name + "'", onnx::attribute_field_name);
    std::uint64_t count = 0;
    while (run.next()) {
      const Field& f = run.field();
      if (f.number != a.field) continue;
      if (f.wire == WireType::length_delimited)
        count += floats ? f.length / 4 : protobuf::for_each_varint(run, "ints", [](std::uint64_t, std::uint64_t) {});
      else ++count;
    }
    return count;
  }

  // TENSORS / SPARSE_TENSORS attributes: every element of the list, "<name>.<i>".
  void scan_list_element(const DataAttribute& a, const std::string& name, const std::string& origin,
                         const std::string& context) {
    namespace af = onnx::attribute_field;
    MessageScanner run(*source_, a.tag_offset, a.field_end, context, onnx::attribute_field_name);
    std::uint64_t index = 0;
    while (run.next()) {
      if (run.field().number != a.field) continue;
      const std::string element = name + "." + std::to_string(index);
      const std::string element_origin = origin + " element " + std::to_string(index++);
      if (a.field == af::tensors)
        scan_initializer(run.nested(context, onnx::tensor_field_name), element, element_origin);
      else scan_sparse(run.nested(context, onnx::sparse_field_name), element, element_origin);
    }
  }

  // SparseTensorProto: values and indices are ordinary TensorProtos; the dense shape is metadata.
  // Returns the sparse tensor's name (its values' name, before renaming).
  std::string scan_sparse(MessageScanner sparse, std::optional<std::string> name, const std::string& origin) {
    std::optional<std::pair<std::uint64_t, std::uint64_t>> values, indices;
    std::vector<std::int64_t> dims;
    while (sparse.next()) {
      const Field& f = sparse.field();
      if (f.number == onnx::sparse_field::values || f.number == onnx::sparse_field::indices) {
        sparse.expect(WireType::length_delimited, onnx::sparse_field_name(f.number));
        (f.number == onnx::sparse_field::values ? values : indices) = std::pair{f.offset, f.offset + f.length};
      } else if (f.number == onnx::sparse_field::dims) {
        protobuf::for_each_varint(sparse, "dims", [&](std::uint64_t value, std::uint64_t at) {
          if (dims.size() >= kMaxRank) sparse.fail_field("dims", at, "more than ", kMaxRank, " dimensions");
          dims.push_back(static_cast<std::int64_t>(value));
        });
      }
    }
    if (!values || !indices)
      source_->fail_at(sparse.begin(), sparse.context(), ": a sparse tensor without ", values ? "indices" : "values");
    // The sparse tensor's name is its values' name (onnx.proto), unless a Constant names it.
    const std::size_t first = manifest_.tensors.size();
    const std::string values_name = scan_initializer(
        MessageScanner(*source_, values->first, values->second, sparse.context() + " values", onnx::tensor_field_name),
        name ? std::optional<std::string>(*name + ".values") : std::nullopt, origin + " (values)");
    TensorInfo& v = manifest_.tensors[first];
    std::string base = name ? *name : v.name;
    if (!name) rename(first, base + ".values");
    scan_initializer(MessageScanner(*source_, indices->first, indices->second, sparse.context() + " indices",
                                    onnx::tensor_field_name),
                     base + ".indices", origin + " (indices)");
    std::string shape;
    for (std::int64_t d : dims) shape += (shape.empty() ? "" : ",") + std::to_string(d);
    meta("sparse." + base + ".dims", "[" + shape + "]");
    return name ? *name : values_name;
  }

  // A name not used before in this model: repeats (two If branches both naming a Constant "c")
  // get "#2", "#3", ... in the order they are met, so names are unique and stable.
  // Linear however often a name repeats: each name remembers the suffix it reached.
  // (The caller takes the name: names_.insert once the tensor holds it.)
  std::string unique(std::string name) {
    const auto name_of = [this](std::uint32_t id) { return taken_name(id); };
    if (!names_.contains(name, name_of)) return name;
    std::uint64_t& n = next_suffix_.try_emplace(name, 2).first->second;
    for (;; ++n) {
      std::string candidate = name + "#" + std::to_string(n);
      if (!names_.contains(candidate, name_of)) return candidate;
    }
  }

  void admit(TensorInfo info, const std::string& name, const std::string& context) {
    if (manifest_.tensors.size() >= kKeptName)
      fail(ErrorCode::unsupported, file_.string(), ": ", context, ": more than 2^31 tensors in one model");
    info.name = unique(name);
    caps_.admit(file_, context, info.name);
    manifest_.tensors.push_back(std::move(info));
    names_.insert(static_cast<std::uint32_t>(manifest_.tensors.size() - 1),
                  [this](std::uint32_t id) { return taken_name(id); });
  }

  // Tensor `position` takes `name` made unique; the name it had stays taken (a sparse tensor's,
  // whose values the tensor holds).
  void rename(std::size_t position, std::string name) {
    const auto name_of = [this](std::uint32_t id) { return taken_name(id); };
    const auto id = static_cast<std::uint32_t>(position);
    kept_names_.push_back(manifest_.tensors[position].name);
    names_.replace(id, kKeptName | static_cast<std::uint32_t>(kept_names_.size() - 1), name_of);
    manifest_.tensors[position].name = unique(std::move(name));
    names_.insert(id, name_of);
  }

  // names_'s ids: a tensor's position, or kKeptName | an index into kept_names_.
  static constexpr std::uint32_t kKeptName = 1u << 31;
  // Both kinds of id: kKeptName and the bits of a position below the model's cap on tensors (a
  // kept name's index is below it too: one per tensor renamed).
  static std::uint32_t id_mask(std::uint64_t max_tensors) {
    const int bits = std::min(31, static_cast<int>(std::bit_width(max_tensors - 1)));
    return kKeptName | ((std::uint32_t{1} << bits) - 1);
  }
  std::string_view taken_name(std::uint32_t id) const {
    return id & kKeptName ? std::string_view(kept_names_[id & ~kKeptName])
                          : std::string_view(manifest_.tensors[id].name);
  }

  // A TensorProto: an initializer, or a constant attribute's value (`name` then overrides the
  // TensorProto's own name, which such values often lack).
  // Returns the tensor's own name (before renaming).
  std::string scan_initializer(MessageScanner tensor, std::optional<std::string> name = {}, std::string origin = {}) {
    TensorFields t;
    t.where = tensor.context();
    while (tensor.next()) {
      const Field& f = tensor.field();
      switch (f.number) {
        case tf::dims:
          protobuf::for_each_varint(tensor, "dims", [&](std::uint64_t value, std::uint64_t at) {
            if (t.rank >= kMaxRank) tensor.fail_field("dims", at, "more than ", kMaxRank, " dimensions");
            if (static_cast<std::int64_t>(value) < 0 && !t.negative) t.negative.emplace(t.rank, at);
            t.dims[t.rank++] = static_cast<std::int64_t>(value);
          });
          break;
        case tf::data_type:
          tensor.expect(WireType::varint, "data_type");
          t.data_type = static_cast<std::int64_t>(f.value);
          t.data_type_offset = f.tag_offset;
          break;
        case tf::segment: t.segment = f.tag_offset; break;
        case tf::name:
          t.name = tensor.read_string("name", kMaxName);
          t.named = true;
          names_.prefetch(t.name);  // admit() adds it after the fields that follow
          break;
        case tf::raw_data:
          tensor.expect(WireType::length_delimited, "raw_data");
          t.raw_data = f;  // a repeated bytes field: protobuf keeps the last
          break;
        case tf::string_data:
          tensor.expect(WireType::length_delimited, "string_data");
          if (!t.string_data) t.string_data = f.tag_offset;
          break;
        case tf::float_data:
        case tf::double_data:
        case tf::int32_data:
        case tf::int64_data:
        case tf::uint64_data: add_typed(tensor, t); break;
        case tf::external_data:
          tensor.expect(WireType::length_delimited, "external_data");
          add_external(tensor.nested(tensor.context() + " external_data", onnx::entry_field_name), f.tag_offset, t);
          break;
        case tf::data_location:
          tensor.expect(WireType::varint, "data_location");
          t.data_location = f.value;
          t.data_location_offset = f.tag_offset;
          break;
        default: break;  // doc_string, metadata_props, ...
      }
    }
    if (name) {
      t.name = *name;
      t.named = true;
    }
    TensorInfo info = make_tensor(t);
    if (!origin.empty()) info.origin = std::make_shared<const std::string>(std::move(origin));
    admit(std::move(info), t.name, tensor.context());
    return t.name;
  }

  void add_typed(MessageScanner& tensor, TensorFields& t) {
    const Field& f = tensor.field();
    const std::string_view name = onnx::tensor_field_name(f.number);
    const bool is_float = f.number == tf::float_data, is_double = f.number == tf::double_data;
    auto [it, fresh] = t.typed.try_emplace(f.number);
    TypedRecord& record = it->second;
    if (fresh) record.first = f.tag_offset;
    if (f.wire == WireType::length_delimited) {
      if ((is_float && f.length % 4 != 0) || (is_double && f.length % 8 != 0))
        tensor.fail_field(name, f.tag_offset, "packed length ", f.length, " is not a multiple of ", is_float ? 4 : 8);
      record.payload.add(f.offset, f.length);
    } else {
      const WireType scalar = is_float ? WireType::fixed32 : is_double ? WireType::fixed64 : WireType::varint;
      tensor.expect(scalar, name);
      record.unpacked = true;
    }
    record.whole.add(f.tag_offset, f.end - f.tag_offset);
    if (record.whole.pieces.size() > kMaxPieces || record.payload.pieces.size() > kMaxPieces)
      tensor.fail_field(name, f.tag_offset, "split into more than ", kMaxPieces, " separate runs");
  }

  void add_external(MessageScanner entry, std::uint64_t offset, TensorFields& t) {
    if (t.external.empty()) t.external_offset = offset;
    if (t.external.size() >= 16) entry.fail_field("external_data", t.external_offset, "more than 16 entries");
    std::string key, value;
    while (entry.next()) {
      if (entry.field().number == onnx::entry_field::key) key = entry.read_string("key", 4096);
      if (entry.field().number == onnx::entry_field::value) value = entry.read_string("value", 4096);
    }
    t.external.emplace_back(std::move(key), std::move(value));
  }

  template <typename... Parts>
  [[noreturn]] void fail_tensor(ErrorCode code, const TensorFields& t, std::string_view field, std::uint64_t offset,
                                const Parts&... detail) const {
    fail(code, file_.string(), ": tensor '", t.name, "': field ", field, " at offset ", offset, ": ", detail...);
  }

  TensorInfo make_tensor(TensorFields& t) {
    if (!t.named || t.name.empty())
      fail(ErrorCode::bad_input, file_.string(), ": ", t.where, ": initializer has no name (field 8)");
    if (t.segment)
      fail_tensor(ErrorCode::unsupported, t, "segment", *t.segment,
                  "segmented tensors (data split across TensorProtos) are not supported");
    if (!t.data_type) fail(ErrorCode::bad_input, file_.string(), ": tensor '", t.name, "': no data_type (field 2)");
    if (const auto negative = t.negative)
      fail_tensor(ErrorCode::bad_input, t, "dims", negative->second, "dimension ", negative->first, " is negative (",
                  t.dims[negative->first], ")");

    TensorInfo info;
    info.name = t.name;
    info.dtype = dtype_from_onnx(*t.data_type, file_, t.name, t.data_type_offset);
    info.shape.assign(t.dims.begin(), t.dims.begin() + static_cast<std::ptrdiff_t>(t.rank));  // checked above

    // Exactly one place may hold the data.
    if (t.data_location > onnx::kDataLocationExternal)
      fail_tensor(ErrorCode::bad_input, t, "data_location", t.data_location_offset, "value ", t.data_location,
                  " is neither DEFAULT (0) nor EXTERNAL (1)");
    const bool external = t.data_location == onnx::kDataLocationExternal;
    if (external && t.external.empty())
      fail_tensor(ErrorCode::bad_input, t, "data_location", t.data_location_offset,
                  "EXTERNAL but there is no external_data (field 13)");
    if (!external && !t.external.empty())
      fail_tensor(ErrorCode::bad_input, t, "external_data", t.external_offset,
                  "present but data_location is not EXTERNAL (1)");
    // The first two places that hold data, named (no allocation: this runs for every tensor).
    std::array<std::string_view, 2> sources;
    std::size_t source_count = 0;
    const auto source = [&](std::string_view field) {
      if (source_count < sources.size()) sources[source_count] = field;
      ++source_count;
    };
    if (t.raw_data) source("raw_data");
    if (external) source("external_data");
    if (t.string_data) source("string_data");
    for (const auto& [number, record] : t.typed) source(onnx::tensor_field_name(number));
    if (source_count > 1)
      fail(ErrorCode::bad_input, file_.string(), ": tensor '", t.name, "': data is stored in both ", sources[0],
           " and ", sources[1], " (ONNX allows one)");

    if (info.dtype == DType::STRING) {
      // Variable-length strings: reported so the model's tensors are complete, never loaded.
      if (source_count > 0 && !t.string_data)
        fail(ErrorCode::bad_input, file_.string(), ": tensor '", t.name, "': a STRING tensor stores ", sources[0],
             " (ONNX keeps strings in string_data)");
      if (!element_count(info.shape))
        fail(ErrorCode::bad_input, file_.string(), ": tensor '", t.name, "': shape's element count overflows 64 bits");
      return info;
    }
    info.bytes = tensor_bytes(file_, t.name, info.dtype, info.shape);

    if (source_count == 0) {
      if (info.bytes == 0) return info;  // an empty tensor needs no data
      fail(ErrorCode::bad_input, file_.string(), ": tensor '", t.name, "': ", info.bytes, " bytes of ",
           dtype_name(info.dtype), " but no data (no raw_data, typed *_data field or external_data)");
    }
    if (t.string_data)
      fail_tensor(ErrorCode::bad_input, t, "string_data", *t.string_data, "holds strings but data_type is ",
                  dtype_name(info.dtype));
    if (t.raw_data) {
      check_tensor_length(file_, t.name, info.dtype, info.shape, t.raw_data->length);
      if (t.raw_data->length > 0) info.pieces.push_back(Piece{0, t.raw_data->offset, t.raw_data->length});
    } else if (external) {
      place_external(t, info);
    } else {
      place_typed(t, info);
    }
    return info;
  }

  void place_typed(TensorFields& t, TensorInfo& info) {
    auto& [number, record] = *t.typed.begin();
    const std::string_view field = onnx::tensor_field_name(number);
    const auto expected = onnx::typed_field_for(info.dtype);
    if (!expected || expected->number != number) {
      if (!expected)
        fail_tensor(ErrorCode::unsupported, t, field, record.first, dtype_name(info.dtype),
                    " tensors stored in typed fields are not supported (use raw_data)");
      fail_tensor(ErrorCode::bad_input, t, field, record.first, "cannot hold ", dtype_name(info.dtype),
                  " (ONNX stores it in ", onnx::tensor_field_name(expected->number), ")");
    }
    if (expected->wire != onnx::TypedWire::varint && !record.unpacked) {
      // Packed floats/doubles are the tensor's little-endian bytes already.
      check_tensor_length(file_, t.name, info.dtype, info.shape, record.payload.total);
      info.pieces = std::move(record.payload.pieces);
      return;
    }
    info.encoding = expected->wire == onnx::TypedWire::varint ? Encoding::onnx_varint : Encoding::onnx_fixed;
    info.pieces = std::move(record.whole.pieces);  // element count is checked by decode_tensor
  }

  void place_external(const TensorFields& t, TensorInfo& info) {
    std::optional<std::string> location;
    std::optional<std::uint64_t> offset, length;
    for (const auto& entry : t.external) {
      // Named references, not a structured binding: clang (the fuzz build) cannot capture those.
      const std::string& key = entry.first;
      const std::string& value = entry.second;
      auto number = [&](std::optional<std::uint64_t>& out) {
        if (out)
          fail_tensor(ErrorCode::bad_input, t, "external_data", t.external_offset, "key '", key, "' appears twice");
        out = parse_decimal(value);
        if (!out)
          fail_tensor(ErrorCode::bad_input, t, "external_data", t.external_offset, key, " '", value,
                      "' is not a decimal byte count");
      };
      if (key == "location") {
        if (location)
          fail_tensor(ErrorCode::bad_input, t, "external_data", t.external_offset, "key 'location' appears twice");
        location = value;
      } else if (key == "offset") {
        number(offset);
      } else if (key == "length") {
        number(length);
      } else if (key != "checksum") {  // a SHA-1 lwload does not verify
        fail_tensor(ErrorCode::bad_input, t, "external_data", t.external_offset, "unknown key '", key,
                    "' (expected location, offset, length or checksum)");
      }
    }
    if (!location) fail_tensor(ErrorCode::bad_input, t, "external_data", t.external_offset, "no 'location' key");
    const std::filesystem::path path =
        resolve_inside(file_.parent_path(), *location, file_, str("tensor '", t.name, "': external_data location"));
    if (!fs_.exists(path) || fs_.is_directory(path))
      fail_tensor(ErrorCode::bad_input, t, "external_data", t.external_offset, "external data file ", path.string(),
                  " (location '", *location, "') ", fs_.exists(path) ? "is a directory, not a file" : "does not exist");
    const std::uint64_t size = external_size(path);
    const std::uint64_t data_offset = offset.value_or(0);
    // onnx (external_data_helper.load_external_data_for_tensor) reads `length` bytes, or, when the
    // length is absent or 0, from the offset to the end of the file, and refuses more bytes than the
    // tensor holds; a reader taking the tensor's size from its shape reads the first bytes. The two
    // agree only when the rest of the file is exactly the tensor.
    const bool to_end = !length || *length == 0;
    const std::uint64_t data_length = to_end ? info.bytes : *length;
    check_extent(path, str("tensor '", t.name, "' external data (from ", file_.string(), ")"), data_offset, data_length,
                 size);
    if (to_end && size - data_offset != info.bytes)
      fail_tensor(ErrorCode::bad_input, t, "external_data", t.external_offset, length ? "length 0" : "no 'length'",
                  ": onnx reads from offset ", data_offset, " to the end of ", path.string(), " (", size - data_offset,
                  " bytes) but the tensor is ", info.bytes,
                  " bytes: which bytes are meant is ambiguous (give its length)");
    check_tensor_length(file_, t.name, info.dtype, info.shape, data_length);
    const std::uint32_t index = file_index(manifest_, path);
    if (data_length > 0) info.pieces.push_back(Piece{index, data_offset, data_length});
  }

  std::uint64_t external_size(const std::filesystem::path& path) {
    const auto it = sizes_.find(path);
    if (it != sizes_.end()) return it->second;
    const std::uint64_t size = fs_.open(path)->size();
    sizes_.emplace(path, size);
    return size;
  }

  FileSystem& fs_;
  std::filesystem::path file_;
  TensorCaps caps_;
  std::unique_ptr<RandomAccessFile> handle_;
  std::unique_ptr<protobuf::WindowedReader> source_;  // on the heap: it holds a 64 KiB buffer
  Manifest manifest_;
  std::map<std::filesystem::path, std::uint64_t> sizes_;
  const std::uint32_t id_mask_;                                 // the bits names_'s ids use (the rest tag names)
  NameSet names_;                                               // every tensor's name, and kept_names_
  std::vector<std::string> kept_names_;                         // names taken by no tensor now (rename())
  std::unordered_map<std::string, std::uint64_t> next_suffix_;  // unique(): the next "#n" to try per name
  std::uint64_t functions_ = 0;
};

// ONNX has no magic number. A file is taken for ONNX when its first bytes parse as ModelProto
// fields with the right wire types (onnx.save writes ir_version, tag 0x08, first). The .onnx
// extension breaks ties: with it one valid field is enough, without it the file must start with
// a plausible ir_version followed by another valid field.
bool looks_like_model_proto(std::span<const std::byte> head, bool onnx_extension) {
  std::size_t pos = 0;
  auto varint = [&](std::uint64_t& out) {
    const Varint v = decode_varint(head.subspan(pos));
    if (v.status != Varint::Status::ok) return false;  // ran off the head (or bad): stop judging here
    out = v.value;
    pos += v.length;
    return true;
  };
  int fields = 0;
  bool ir_version_first = false;
  while (pos < head.size()) {
    std::uint64_t tag = 0;
    if (!varint(tag)) break;
    const std::uint64_t number = tag >> 3, wire = tag & 7;
    const bool is_varint_field = number == 1 || number == 5;
    const bool is_message_field =
        (number >= 2 && number <= 4) || (number >= 6 && number <= 8) || number == 14 || number == 20 || number == 25;
    if (is_varint_field ? wire != 0 : !(is_message_field && wire == 2)) return false;
    std::uint64_t value = 0;
    if (!varint(value)) break;
    if (number == 1) {
      if (value == 0 || value > 100) return false;
      if (fields == 0) ir_version_first = true;
    }
    ++fields;
    if (wire == 2) {
      if (value >= head.size() - pos) break;  // payload continues past the head
      pos += static_cast<std::size_t>(value);
    }
  }
  if (fields == 0) return false;
  return onnx_extension || (ir_version_first && fields >= 2);
}

// A folder's model: model.onnx, or else its one *.onnx file (external data beside it).
std::vector<std::filesystem::path> folder_models(FileSystem& fs, const std::filesystem::path& dir) {
  const auto standard = dir / kFolderModel;
  if (fs.exists(standard) && !fs.is_directory(standard)) return {standard};
  std::vector<std::filesystem::path> out;
  for (const std::filesystem::path& entry : fs.list(dir))
    if (entry.extension() == ".onnx" && !fs.is_directory(entry)) out.push_back(entry);
  std::sort(out.begin(), out.end());
  return out;
}

bool detect(const ModelSource& source) {
  if (source.is_directory) return !folder_models(source.fs, source.path).empty();
  return looks_like_model_proto(source.head, source.path.extension() == ".onnx");
}

Manifest read(const ModelSource& source) {
  if (!source.is_directory) return OnnxScan(source.fs, source.path, source.limits).run();
  const auto models = folder_models(source.fs, source.path);
  if (models.size() != 1) {
    std::string names;
    for (const auto& m : models) names += (names.empty() ? "" : ", ") + m.filename().string();
    fail(ErrorCode::bad_input, source.path.string(), ": the folder holds ", models.size(), " ONNX models (", names,
         "); open one of them by name");
  }
  return OnnxScan(source.fs, models.front(), source.limits).run();
}

}  // namespace

const FormatReader onnx_reader{"onnx", detect, read};

}  // namespace lwload::formats
