// The manifest as ggml tensors: types, `ne`, and each loaded tensor placed at its bytes inside the
// ggml buffer the load made for it (lwload/ggml.hpp).
#include <algorithm>
#include <array>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ggml_adapter.hpp"
#include "lwload/error.hpp"
#include "lwload/ggml.hpp"

namespace lwload::ggml {
namespace {

// The types other formats store that ggml has under the same name and layout.
constexpr std::array<std::pair<DType, ggml_type>, 8> kPlainTypes{{
    {DType::F32, GGML_TYPE_F32},
    {DType::F16, GGML_TYPE_F16},
    {DType::BF16, GGML_TYPE_BF16},
    {DType::F64, GGML_TYPE_F64},
    {DType::I8, GGML_TYPE_I8},
    {DType::I16, GGML_TYPE_I16},
    {DType::I32, GGML_TYPE_I32},
    {DType::I64, GGML_TYPE_I64},
}};

std::optional<ggml_type> ggml_type_for(DType dtype, std::string_view format) {
  for (const auto& [plain, type] : kPlainTypes)
    if (plain == dtype) return type;
  if (format != "gguf") return std::nullopt;
  // GGUF tensors name their ggml type by id: the same id, as lwload's table knows it.
  for (int id = 0; id < GGML_TYPE_COUNT; ++id)
    if (dtype_from_ggml(static_cast<std::uint32_t>(id)) == dtype) return static_cast<ggml_type>(id);
  return std::nullopt;
}

// ggml's `ne`: GGUF stores it (ne0 first); row-major formats list the outermost dimension first.
std::array<std::int64_t, GGML_MAX_DIMS> ne_of(const TensorInfo& tensor, std::string_view format) {
  if (tensor.shape.size() > GGML_MAX_DIMS)
    fail(ErrorCode::unsupported, "tensor '", tensor.name, "': ", tensor.shape.size(),
         " dimensions, but ggml tensors have at most ", GGML_MAX_DIMS);
  std::array<std::int64_t, GGML_MAX_DIMS> ne{1, 1, 1, 1};
  const std::size_t rank = tensor.shape.size();
  for (std::size_t i = 0; i < rank; ++i) ne[i] = format == "gguf" ? tensor.shape[i] : tensor.shape[rank - 1 - i];
  return ne;
}

}  // namespace

ggml_type type_of(const TensorInfo& tensor, std::string_view format) {
  const std::optional<ggml_type> type = ggml_type_for(tensor.dtype, format);
  if (!type)
    fail(ErrorCode::unsupported, "tensor '", tensor.name, "': ", dtype_name(tensor.dtype), " has no ggml type",
         format == "gguf" ? "" : " (ggml takes F32, F16, BF16, F64, I8, I16, I32 and I64 from this format)");
  // A type the linked ggml names but has no block layout for (a retired id) cannot be read by it.
  const ggml_type_traits* traits = ggml_get_type_traits(*type);
  if (!traits || !traits->type_name || traits->blck_size <= 0 || traits->type_size == 0)
    fail(ErrorCode::unsupported, "tensor '", tensor.name, "': ", dtype_name(tensor.dtype), " is ggml type ",
         static_cast<int>(*type), ", which the linked ggml has no block layout for");
  // lwload computed the tensor's bytes from its own block table; ggml must agree, or the tensor
  // would be read with another layout than it was stored with.
  const std::optional<DTypeLayout> layout = dtype_layout(tensor.dtype);
  if (!layout || layout->block_elems != static_cast<std::uint32_t>(traits->blck_size) ||
      layout->block_bytes != traits->type_size)
    fail(ErrorCode::unsupported, "tensor '", tensor.name, "': ", dtype_name(tensor.dtype), " is ggml's ",
         traits->type_name, ", whose block (", traits->blck_size, " elements in ", traits->type_size,
         " bytes) this ggml build lays out differently from lwload");
  return *type;
}

struct Model::State {
  Weights weights;
  ggml_context* context = nullptr;
  std::vector<ggml_tensor*> tensors;  // per manifest tensor
  std::unordered_map<std::string_view, ggml_tensor*> by_name;

  explicit State(Weights w) : weights(std::move(w)) {}
  State(const State&) = delete;
  State& operator=(const State&) = delete;
  ~State() {
    // The context holds the tensor records only; the buffers their data lives in are the
    // Weights', freed after it (buffers first, then the mappings under them).
    if (context) ggml_free(context);
  }
};

Model::Model(std::unique_ptr<State> state) : state_(std::move(state)) {}
Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;
Model::~Model() = default;

ggml_context* Model::context() const noexcept { return state_->context; }
std::span<ggml_tensor* const> Model::tensors() const noexcept { return state_->tensors; }
const Weights& Model::weights() const noexcept { return state_->weights; }
ggml_tensor* Model::tensor(std::string_view name) const noexcept {
  const auto it = state_->by_name.find(name);
  return it == state_->by_name.end() ? nullptr : it->second;
}

Model load(Manifest manifest, ggml_backend_dev_t device_handle, const LoadOptions& options,
           const DeviceOverrides& overrides) {
  std::unique_ptr<Device> device = open_device(device_handle, overrides);
  Plan plan = make_plan(manifest, device->info(), options.plan);

  // Every tensor the plan loads must have a ggml type, shape and name: refused before a byte is read.
  std::size_t described = 0;
  std::uint64_t allocated = 0;  // bytes of direct and staged tensors, as the device cuts them
  const std::uint64_t alignment = std::max<std::uint64_t>(device->info().caps.tensor_alignment, 1);
  for (std::size_t i = 0; i < manifest.tensors.size(); ++i) {
    const Placement placement = plan.tensors[i].placement;
    if (placement == Placement::skipped) continue;
    const TensorInfo& t = manifest.tensors[i];
    const ggml_type type = type_of(t, manifest.format);
    const auto ne = ne_of(t, manifest.format);
    // A ggml tensor is its dense bytes: a tensor the file stores sparse (TFLite) is its stored
    // values unless the model was opened densified.
    const std::uint64_t dense = ggml_row_size(type, ne[0]) * static_cast<std::uint64_t>(ne[1] * ne[2] * ne[3]);
    if (dense != t.bytes)
      fail(ErrorCode::unsupported, "tensor '", t.name, "': ggml counts ", dense,
           " bytes for its type and shape, the load holds ", t.bytes,
           t.sparsity ? " (it is stored sparse: open the model with OpenOptions::densify)" : "");
    if (placement != Placement::zero_copy) allocated += (t.bytes + alignment - 1) / alignment * alignment;
    ++described;
  }
  // Names last: a tensor ggml cannot hold at all is the first thing to say.
  check_names(manifest, plan);
  expect_allocations(*device, allocated);

  const std::string format = manifest.format;
  auto state = std::make_unique<Model::State>(lwload::load(std::move(manifest), *device, std::move(plan), options));
  const ggml_init_params params{ggml_tensor_overhead() * (described + 1), nullptr, true};
  state->context = ggml_init(params);
  if (!state->context) fail(ErrorCode::out_of_memory, "ggml: no memory for ", described, " tensor records");

  const auto handles = state->weights.tensors();
  state->tensors.assign(handles.size(), nullptr);
  for (const TensorHandle& handle : handles) {
    if (!handle.buffer) continue;  // skipped
    const TensorInfo& info = *handle.info;
    const auto ne = ne_of(info, format);
    ggml_tensor* tensor = ggml_new_tensor(state->context, type_of(info, format), GGML_MAX_DIMS, ne.data());
    ggml_set_name(tensor, info.name.c_str());  // held whole: check_names
    const std::optional<Place> place = place_of(handle);
    if (!place) fail(ErrorCode::device, "tensor '", info.name, "' was not loaded into a ggml buffer");
    // What ggml may use of the tensor (its bytes, or more where the buffer type pads) must lie in
    // the tensor's own slice: the next slice is another tensor's.
    const std::uint64_t needs = ggml_backend_buffer_get_alloc_size(place->buffer, tensor);
    if (needs > place->room)
      fail(ErrorCode::device, "tensor '", info.name, "': ggml needs ", needs, " bytes at offset ", place->offset,
           " of its buffer, the tensor's slice has ", place->room);
    char* base = static_cast<char*>(ggml_backend_buffer_get_base(place->buffer));
    if (ggml_backend_tensor_alloc(place->buffer, tensor, base + place->offset) != GGML_STATUS_SUCCESS)
      fail(ErrorCode::device, "tensor '", info.name, "': ggml could not place it in its buffer");
    state->tensors[handle.index] = tensor;
    state->by_name.emplace(info.name, tensor);
  }
  return Model(std::move(state));
}

}  // namespace lwload::ggml
