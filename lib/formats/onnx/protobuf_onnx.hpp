// ONNX's protobuf vocabulary (onnx/onnx.proto): the field numbers the ONNX reader walks and which
// TensorProto typed field carries which element type. Shared by the reader (onnx.cpp), which
// records where typed fields lie, and the decoder (onnx_decode.cpp), which converts them at load
// time, so both agree on one table.
#pragma once

#include "formats/onnx/layer.hpp"

#include <cstdint>
#include <optional>
#include <string_view>

#include "lwload/dtype.hpp"

namespace lwload::formats::onnx {

namespace model_field {
inline constexpr std::uint32_t ir_version = 1, producer_name = 2, producer_version = 3, domain = 4, model_version = 5,
                               doc_string = 6, graph = 7, opset_import = 8, metadata_props = 14, functions = 25;
}
namespace opset_field {  // OperatorSetIdProto
inline constexpr std::uint32_t domain = 1, version = 2;
}
namespace entry_field {  // StringStringEntryProto
inline constexpr std::uint32_t key = 1, value = 2;
}
namespace graph_field {
inline constexpr std::uint32_t node = 1, name = 2, initializer = 5, sparse_initializer = 15;
}
namespace node_field {
inline constexpr std::uint32_t output = 2, name = 3, op_type = 4, attribute = 5, domain = 7;
}
namespace function_field {  // FunctionProto (ModelProto.functions: model-local functions)
inline constexpr std::uint32_t name = 1, node = 7;
}
namespace sparse_field {  // SparseTensorProto
inline constexpr std::uint32_t values = 1, indices = 2, dims = 3;
}
namespace attribute_field {
inline constexpr std::uint32_t name = 1, f = 2, i = 3, s = 4, t = 5, g = 6, floats = 7, ints = 8, strings = 9,
                               tensors = 10, graphs = 11, sparse_tensor = 22, sparse_tensors = 23, tp = 14,
                               type_protos = 15, type = 20;
// AttributeProto.AttributeType: the value `type` must have for each value field (the checker's rule).
inline constexpr std::uint64_t attribute_type_for(std::uint32_t field) noexcept {
  switch (field) {
    case f: return 1;
    case i: return 2;
    case s: return 3;
    case t: return 4;
    case g: return 5;
    case floats: return 6;
    case ints: return 7;
    case strings: return 8;
    case tensors: return 9;
    case graphs: return 10;
    case sparse_tensor: return 11;
    case sparse_tensors: return 12;
    case tp: return 13;
    case type_protos: return 14;
    default: return 0;
  }
}
}  // namespace attribute_field
namespace tensor_field {
inline constexpr std::uint32_t dims = 1, data_type = 2, segment = 3, float_data = 4, int32_data = 5, string_data = 6,
                               int64_data = 7, name = 8, raw_data = 9, double_data = 10, uint64_data = 11,
                               doc_string = 12, external_data = 13, data_location = 14;
}

inline constexpr std::uint64_t kDataLocationExternal = 1;

// Field names for error messages ("" for numbers lwload does not read).
inline std::string_view tensor_field_name(std::uint32_t number) noexcept {
  switch (number) {
    case tensor_field::dims: return "dims";
    case tensor_field::data_type: return "data_type";
    case tensor_field::segment: return "segment";
    case tensor_field::float_data: return "float_data";
    case tensor_field::int32_data: return "int32_data";
    case tensor_field::string_data: return "string_data";
    case tensor_field::int64_data: return "int64_data";
    case tensor_field::name: return "name";
    case tensor_field::raw_data: return "raw_data";
    case tensor_field::double_data: return "double_data";
    case tensor_field::uint64_data: return "uint64_data";
    case tensor_field::doc_string: return "doc_string";
    case tensor_field::external_data: return "external_data";
    case tensor_field::data_location: return "data_location";
    default: return "";
  }
}

inline std::string_view model_field_name(std::uint32_t number) noexcept {
  switch (number) {
    case model_field::ir_version: return "ir_version";
    case model_field::producer_name: return "producer_name";
    case model_field::producer_version: return "producer_version";
    case model_field::domain: return "domain";
    case model_field::model_version: return "model_version";
    case model_field::doc_string: return "doc_string";
    case model_field::graph: return "graph";
    case model_field::opset_import: return "opset_import";
    case model_field::metadata_props: return "metadata_props";
    default: return "";
  }
}

inline std::string_view graph_field_name(std::uint32_t number) noexcept {
  switch (number) {
    case graph_field::node: return "node";
    case graph_field::name: return "name";
    case graph_field::initializer: return "initializer";
    case graph_field::sparse_initializer: return "sparse_initializer";
    default: return "";
  }
}

inline std::string_view node_field_name(std::uint32_t number) noexcept {
  switch (number) {
    case node_field::output: return "output";
    case node_field::name: return "name";
    case node_field::op_type: return "op_type";
    case node_field::attribute: return "attribute";
    case node_field::domain: return "domain";
    default: return "";
  }
}

inline std::string_view attribute_field_name(std::uint32_t number) noexcept {
  switch (number) {
    case attribute_field::name: return "name";
    case attribute_field::f: return "f";
    case attribute_field::i: return "i";
    case attribute_field::s: return "s";
    case attribute_field::t: return "t";
    case attribute_field::g: return "g";
    case attribute_field::floats: return "floats";
    case attribute_field::ints: return "ints";
    case attribute_field::strings: return "strings";
    case attribute_field::tensors: return "tensors";
    case attribute_field::graphs: return "graphs";
    case attribute_field::sparse_tensor: return "sparse_tensor";
    case attribute_field::sparse_tensors: return "sparse_tensors";
    case attribute_field::tp: return "tp";
    case attribute_field::type_protos: return "type_protos";
    case attribute_field::type: return "type";
    default: return "";
  }
}

inline std::string_view function_field_name(std::uint32_t number) noexcept {
  return number == function_field::name ? "name" : number == function_field::node ? "node" : "";
}
inline std::string_view sparse_field_name(std::uint32_t number) noexcept {
  return number == sparse_field::values    ? "values"
         : number == sparse_field::indices ? "indices"
         : number == sparse_field::dims    ? "dims"
                                           : "";
}

// StringStringEntryProto and OperatorSetIdProto share numbers 1 and 2.
inline std::string_view entry_field_name(std::uint32_t number) noexcept {
  return number == entry_field::key ? "key" : number == entry_field::value ? "value" : "";
}
inline std::string_view opset_field_name(std::uint32_t number) noexcept {
  return number == opset_field::domain ? "domain" : number == opset_field::version ? "version" : "";
}

// How a typed field stores one element on the wire.
enum class TypedWire : std::uint8_t {
  varint,   // int32_data / int64_data / uint64_data: one varint per element, truncated to the dtype
  fixed32,  // float_data: little-endian 4-byte floats (COMPLEX64: real, imaginary pairs)
  fixed64,  // double_data: little-endian 8-byte doubles (COMPLEX128: pairs)
};

struct TypedField {
  std::uint32_t number;
  TypedWire wire;
};

// The typed field ONNX uses for tensors of `dtype` (onnx.proto's comments on each field), or
// nullopt when the dtype has no typed field lwload decodes (STRING uses string_data, never
// loaded; INT4 packs two elements per int32 and is only read from raw_data).
inline std::optional<TypedField> typed_field_for(DType dtype) noexcept {
  switch (dtype) {
    case DType::F32:
    case DType::C64: return TypedField{tensor_field::float_data, TypedWire::fixed32};
    case DType::F64:
    case DType::C128: return TypedField{tensor_field::double_data, TypedWire::fixed64};
    case DType::I32:
    case DType::I16:
    case DType::I8:
    case DType::U16:
    case DType::U8:
    case DType::BOOL:
    case DType::F16:
    case DType::BF16:
    case DType::F8_E4M3:
    case DType::F8_E5M2: return TypedField{tensor_field::int32_data, TypedWire::varint};
    case DType::I64: return TypedField{tensor_field::int64_data, TypedWire::varint};
    case DType::U64:
    case DType::U32: return TypedField{tensor_field::uint64_data, TypedWire::varint};
    default: return std::nullopt;
  }
}

// A Constant node's list attributes hold elements the way a TensorProto's typed field does:
// `ints` (and the scalar `i`) as int64 varints, `floats` as fixed32 floats. The decoder accepts
// these AttributeProto field numbers as well for INT64 and FLOAT tensors (nullopt otherwise).
inline bool is_attribute_alias(DType dtype, std::uint32_t number) noexcept {
  if (dtype == DType::I64) return number == attribute_field::i || number == attribute_field::ints;
  if (dtype == DType::F32) return number == attribute_field::floats;
  return false;
}

}  // namespace lwload::formats::onnx
