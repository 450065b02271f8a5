// ONNX models without their weights. A weightless graph is the model's ModelProto with the bytes of
// its constants left out: each TensorProto keeps its name, data_type and dims, and says where its
// bytes are instead (data_location EXTERNAL, external_data location / offset / length), the form
// ONNX's external data already has — so onnx.load reads it, and an engine can build its graph
// before the weights arrive from a loader that knows the device (ONNX Runtime's AddInitializer,
// WebNN's weightless graphs). `lwload strip` writes one to a file; the ONNX Runtime adapter
// (lwload/onnxruntime.hpp) builds one in memory for its session.
#pragma once

// Layer formats_onnx's public header: refused below formats_onnx in lwload's build (docs/ARCHITECTURE.md, "Layers").
#if defined(LWLOAD_LAYER_CORE) && !defined(LWLOAD_LAYER_FORMATS_ONNX)
#error \
    "lwload layering: include/lwload/onnx.hpp (layer formats_onnx) is not below this layer (the layer table in meson.build says what each layer may include)"
#endif

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "lwload/export.h"
#include "lwload/manifest.hpp"

namespace lwload {

// One TensorProto the model holds that is a manifest tensor, in file order.
struct OnnxConstant {
  enum class Kind : std::uint8_t {
    initializer,    // a graph's initializer (the main graph or a subgraph)
    constant_node,  // the `value` tensor of a Constant node (runtimes make it an initializer named
                    // by the node's output)
    attribute,      // any other TENSOR attribute (ConstantOfShape's fill value, ...)
  };
  std::size_t tensor = 0;  // its Manifest::tensors index
  Kind kind = Kind::initializer;
  std::string name;          // the name the graph uses for it: the initializer's, the Constant's output
  bool in_function = false;  // inside a model-local function (runtimes rename what they inline)
  bool in_subgraph = false;  // inside an If/Loop/Scan body
};

// Where a tensor's bytes are, as the weightless graph says it: external_data's location (a path
// relative to the graph's folder) and offset. `length` is the tensor's bytes.
struct DataReference {
  std::string location;
  std::uint64_t offset = 0;
};

struct WeightlessGraph {
  std::string model;                    // the serialized ModelProto
  std::vector<OnnxConstant> constants;  // every TensorProto that is a manifest tensor
  std::vector<std::size_t> left_out;    // of `constants`, those whose bytes are referenced
};

// The TensorProtos of an ONNX manifest's model (Manifest::format "onnx") that are manifest tensors,
// in file order. Reads the headers again (the manifest's own opened file), never tensor data.
LWLOAD_API std::vector<OnnxConstant> onnx_constants(const Manifest& manifest);

// The model with every constant for which `locate` returns a reference described by it instead of
// holding its bytes (raw_data, typed fields or external_data replaced); constants it returns
// std::nullopt for keep what the file has. Constants that are not a manifest tensor (sparse
// tensors' parts, STRING tensors, empty ones) are copied as they are. Everything else in the file
// is copied byte for byte. Reads the model file's headers, never the bytes it leaves out.
LWLOAD_API WeightlessGraph onnx_weightless_graph(
    const Manifest& manifest, const std::function<std::optional<DataReference>(const OnnxConstant&)>& locate);

}  // namespace lwload
