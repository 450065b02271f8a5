// An ONNX Runtime session over lwload's weights (lwload/onnxruntime.hpp): which constants ONNX
// Runtime can take through AddInitializer, loading them, the OrtValues over their bytes, the
// weightless graph that refers to them, and the session — released in the reverse order.
#include "lwload/onnxruntime.hpp"

#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "file_references.hpp"
#include "lwload/backend.hpp"
#include "lwload/error.hpp"
#include "lwload/onnx.hpp"

namespace lwload::onnxruntime {
namespace {

// ONNX Runtime's element type for an lwload dtype (ONNX's TensorProto.DataType numbers, which
// ONNXTensorElementDataType repeats); nullopt where it has none.
std::optional<ONNXTensorElementDataType> element_type(DType dtype) {
  switch (dtype) {
    case DType::F32: return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
    case DType::U8: return ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8;
    case DType::I8: return ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8;
    case DType::U16: return ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16;
    case DType::I16: return ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16;
    case DType::I32: return ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32;
    case DType::I64: return ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64;
    case DType::BOOL: return ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL;
    case DType::F16: return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16;
    case DType::F64: return ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE;
    case DType::U32: return ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT32;
    case DType::U64: return ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64;
    case DType::C64: return ONNX_TENSOR_ELEMENT_DATA_TYPE_COMPLEX64;
    case DType::C128: return ONNX_TENSOR_ELEMENT_DATA_TYPE_COMPLEX128;
    case DType::BF16: return ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16;
    case DType::F8_E4M3: return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E4M3FN;
    case DType::F8_E5M2: return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E5M2;
    case DType::I4: return ONNX_TENSOR_ELEMENT_DATA_TYPE_INT4;
    default: return std::nullopt;
  }
}

// Constants under 1 KiB stay in the graph: ONNX's shape inference, which ONNX Runtime runs on the
// graph, reads the values of shape constants (Reshape's shape, Unsqueeze's axes, Resize's scales)
// and cannot read external data ("Please load external data into raw data"). onnx's own external
// data writer keeps the same tensors inline (convert_model_to_external_data's size_threshold=1024).
constexpr std::uint64_t kInGraphBelow = 1024;
// A model in memory has no file ONNX Runtime could read a constant from: constants its graph
// optimizers may read (a Mul's scalar, a Gemm's bias) stay in the graph too; larger ones are
// referenced at their address.
constexpr std::uint64_t kInMemoryThreshold = 64 * 1024;

// Why a constant stays in the graph ONNX Runtime parses; empty when AddInitializer can take it.
std::string why_in_graph(const OnnxConstant& c, const TensorInfo& t,
                         const std::unordered_map<std::string, std::size_t>& uses, const FileReferences& refs) {
  if (c.kind == OnnxConstant::Kind::attribute)
    return "a tensor attribute of a node that is not a Constant: ONNX Runtime does not make it an initializer";
  if (c.in_function)
    return "inside a model-local function: ONNX Runtime renames the function's values when it inlines it";
  if (c.name.empty() || c.name.find('\0') != std::string::npos)
    return "its graph name holds a NUL byte: AddInitializer takes a C string";
  if (const std::size_t n = uses.at(c.name); n > 1)
    return "'" + c.name + "' names " + std::to_string(n) +
           " constants of the model's graphs: AddInitializer is keyed by name alone";
  if (!element_type(t.dtype)) return std::string(dtype_name(t.dtype)) + " has no ONNX Runtime element type";
  if (t.bytes == 0) return "empty: no bytes to hand over";
  // The graph's reference to the bytes must be true where ONNX Runtime reads them (file_references.hpp).
  if (t.encoding != Encoding::raw || t.pieces.size() != 1)
    return std::string("stored as ") +
           (t.encoding == Encoding::raw ? "several runs" : std::string(encoding_name(t.encoding))) +
           " in the file: the graph keeps it, and ONNX Runtime decodes it itself";
  if (t.bytes < kInGraphBelow)
    return "under " + std::to_string(kInGraphBelow) +
           " bytes: stays in the graph, where ONNX's shape inference reads constants' values";
  if (refs.in_memory && t.bytes < kInMemoryThreshold)
    return "the model is in memory, where ONNX Runtime's graph optimizers cannot read a reference: constants under " +
           std::to_string(kInMemoryThreshold) + " bytes stay in the graph";
  if (!refs.in_memory && refs.location[t.pieces[0].file].empty())
    return "its file cannot be reached by path, where ONNX Runtime's graph optimizers read constants";
  return {};
}

void check(const OrtApi& api, OrtStatus* status, std::string_view what) {
  if (!status) return;
  std::string message = api.GetErrorMessage(status);
  api.ReleaseStatus(status);
  fail(ErrorCode::device, "ONNX Runtime: ", what, ": ", message);
}

}  // namespace

std::string_view way_name(Route::Way way) noexcept {
  switch (way) {
    case Route::Way::zero_copy: return "zero_copy";
    case Route::Way::direct: return "direct";
    case Route::Way::in_graph: return "in_graph";
  }
  return "?";
}

struct Session::State {
  const OrtApi* api = nullptr;
  // Declared in the order they are made; released in reverse (members are destroyed last first),
  // so the session goes before the values it uses and the values before the bytes under them.
  std::optional<Weights> weights;
  std::vector<OrtValue*> values;
  OrtSession* session = nullptr;
  std::vector<Route> routes;
  bool prepacking = true;
  double ready_seconds = 0;

  ~State() {
    if (session) api->ReleaseSession(session);
    for (OrtValue* v : values) api->ReleaseValue(v);
  }
};

Session::Session(std::unique_ptr<State> state) : state_(std::move(state)) {}
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;
Session::~Session() = default;
OrtSession* Session::get() const noexcept { return state_->session; }
const Weights* Session::weights() const noexcept { return state_->weights ? &*state_->weights : nullptr; }
std::span<const Route> Session::routes() const noexcept { return state_->routes; }
bool Session::prepacking() const noexcept { return state_->prepacking; }
double Session::ready_seconds() const noexcept { return state_->ready_seconds; }

Session create_session(const OrtApi& api, OrtEnv* env, const OrtSessionOptions* options, Manifest manifest,
                       const LoadOptions& load) {
  const auto start = std::chrono::steady_clock::now();
  if (manifest.format != "onnx")
    fail(ErrorCode::unsupported, "ONNX Runtime adapter: the model is ", manifest.format, ", not ONNX");
  auto state = std::make_unique<Session::State>();
  state->api = &api;

  // Which constants AddInitializer can take: a name the model's graphs give one constant only.
  const std::vector<OnnxConstant> constants = onnx_constants(manifest);
  const FileReferences refs = file_references(manifest);
  std::unordered_map<std::string, std::size_t> uses;
  for (const auto& c : constants)
    if (c.kind != OnnxConstant::Kind::attribute) ++uses[c.name];
  std::vector<Route>& routes = state->routes;
  std::vector<bool> handed(manifest.tensors.size(), false);
  LoadOptions selected = load;
  selected.plan.only.clear();
  for (const auto& c : constants) {
    const TensorInfo& t = manifest.tensors[c.tensor];
    Route r{c.tensor, c.name, Route::Way::in_graph, why_in_graph(c, t, uses, refs), nullptr, t.bytes};
    if (r.reason.empty()) {
      handed[c.tensor] = true;
      selected.plan.only.push_back(t.name);
    } else if (!t.pieces.empty() && t.pieces[0].file != 0 && refs.location[t.pieces[0].file].empty()) {
      // Left in the graph, its reference to a file beside the model must resolve in refs.folder.
      fail(ErrorCode::unsupported, manifest.files[0].string(), ": tensor '", t.name, "' is external data (",
           manifest.files[t.pieces[0].file].string(), ") that ONNX Runtime cannot take from lwload: ", r.reason);
    }
    routes.push_back(std::move(r));
  }
  // The model's other constants are not TensorProtos ONNX Runtime makes initializers of: Constant
  // nodes' value_float(s) / value_int(s) / strings, sparse tensors' parts, STRING tensors.
  std::vector<bool> routed(manifest.tensors.size(), false);
  for (const auto& c : constants) routed[c.tensor] = true;
  for (std::size_t i = 0; i < manifest.tensors.size(); ++i) {
    const TensorInfo& t = manifest.tensors[i];
    if (routed[i]) continue;
    routes.push_back(Route{
        i, t.name, Route::Way::in_graph,
        "not a TensorProto ONNX Runtime takes as an initializer" + (t.origin ? " (" + *t.origin + ")" : std::string()),
        nullptr, t.bytes});
  }

  // The weights, on lwload's host device: the file's pages where the plan imports them.
  const std::unique_ptr<Device> device = open_device("host");
  if (!selected.plan.only.empty()) state->weights.emplace(lwload::load(std::move(manifest), *device, selected));

  OrtSessionOptions* raw_clone = nullptr;
  check(api, api.CloneSessionOptions(options, &raw_clone), "CloneSessionOptions");
  const std::unique_ptr<OrtSessionOptions, void (*)(OrtSessionOptions*)> clone(raw_clone, api.ReleaseSessionOptions);
  OrtMemoryInfo* raw_info = nullptr;
  check(api, api.CreateCpuMemoryInfo(OrtDeviceAllocator, OrtMemTypeDefault, &raw_info), "CreateCpuMemoryInfo");
  const std::unique_ptr<OrtMemoryInfo, void (*)(OrtMemoryInfo*)> info(raw_info, api.ReleaseMemoryInfo);

  std::vector<const void*> address(handed.size(), nullptr);
  for (Route& r : routes) {
    if (!handed[r.tensor]) continue;
    const Weights& weights = *state->weights;
    const TensorHandle& h = weights.tensors()[r.tensor];
    if (h.native.type != NativeType::host_ptr || !h.native.handle)
      fail(ErrorCode::device, "ONNX Runtime adapter: tensor '", h.info->name, "' has no host address");
    std::byte* bytes = static_cast<std::byte*>(h.native.handle) + h.offset;
    r.way = h.placement == Placement::zero_copy ? Route::Way::zero_copy : Route::Way::direct;
    r.reason = weights.plan().tensors[r.tensor].reason;
    r.data = address[r.tensor] = bytes;
    OrtValue* value = nullptr;
    // ONNX Runtime only reads an added initializer: the mapping under a zero_copy one is read-only.
    check(api,
          api.CreateTensorWithDataAsOrtValue(info.get(), bytes, h.bytes, h.info->shape.data(), h.info->shape.size(),
                                             *element_type(h.info->dtype), &value),
          "CreateTensorWithDataAsOrtValue for '" + r.name + "'");
    state->values.push_back(value);
    check(api, api.AddInitializer(clone.get(), r.name.c_str(), value), "AddInitializer('" + r.name + "')");
  }

  // The graph, with each handed-over constant's TensorProto naming its bytes where they are.
  const Manifest& model = state->weights ? state->weights->manifest() : manifest;
  const WeightlessGraph graph =
      onnx_weightless_graph(model, [&](const OnnxConstant& c) -> std::optional<DataReference> {
        if (!handed[c.tensor]) return std::nullopt;
        if (refs.in_memory) return DataReference{"mem", reinterpret_cast<std::uintptr_t>(address[c.tensor])};
        const Piece& piece = model.tensors[c.tensor].pieces[0];
        return DataReference{refs.location[piece.file], piece.offset};
      });
  check(api,
        api.AddSessionConfigEntry(clone.get(), "session.model_external_initializers_file_folder_path",
                                  refs.folder.c_str()),
        "AddSessionConfigEntry");

  int has = 0;
  check(api, api.HasSessionConfigEntry(clone.get(), "session.disable_prepacking", &has), "HasSessionConfigEntry");
  if (has) {
    char value[8] = {};
    std::size_t size = sizeof value;
    check(api, api.GetSessionConfigEntry(clone.get(), "session.disable_prepacking", value, &size),
          "GetSessionConfigEntry");
    state->prepacking = std::string_view(value) != "1";
  }

  // A model in memory has no file behind its references: should ONNX Runtime's optimizers read a
  // handed-over constant themselves, it refuses the session, and the message says why.
  check(api, api.CreateSessionFromArray(env, graph.model.data(), graph.model.size(), clone.get(), &state->session),
        refs.in_memory ? "CreateSessionFromArray (a model in memory: constants of 64 KiB or more are given to ONNX "
                         "Runtime by address, and its graph optimizers cannot read those; open the model by path or "
                         "descriptor)"
                       : "CreateSessionFromArray");
  check_unchanged(refs, model);
  state->ready_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return Session(std::move(state));
}

}  // namespace lwload::onnxruntime
