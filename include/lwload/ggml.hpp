// lwload's ggml adapter (liblwload-ggml, built with -Dggml when ggml is found; lwload/ggml.h is its
// C side): an application built on ggml gets a ggml_context whose tensors carry the model's names,
// ggml types and `ne`, with their data in ggml backend buffers made over the bytes lwload loaded. On
// a device that imports host memory (ggml's CPU device; a Vulkan device on unified memory) those
// buffers are the model file's own mapped pages: no copy of the weights exists, and they are
// resident when load() returns unless LoadOptions::lazy. Elsewhere they are slices of the device's
// own buffers, filled by lwload's direct or staged path. Which tensor went where, and why, is in
// weights().plan(), as for every device.
//
//   ggml_backend_load_all();
//   ggml_backend_dev_t dev = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_GPU);
//   lwload::ggml::Model model = lwload::ggml::load(lwload::open_manifest("model.gguf"), dev);
//   ggml_tensor* w = model.tensor("blk.0.attn_q.weight");   // or ggml_get_tensor(model.context(), ...)
//   ... build a graph on w, ggml_backend_graph_compute(backend, graph) ...
//
// Names: each loaded tensor is named in ggml exactly as in the model, so ggml_get_tensor finds it by
// its own name. ggml reads names as C strings and keeps at most GGML_MAX_NAME - 1 (63) bytes, so a
// name with a NUL byte or longer than that is refused (Error(unsupported), naming the tensor and the
// limit, before anything is read), never cut into another tensor's name.
// Types: a GGUF tensor keeps its ggml type — every type the linked ggml has a block layout for and
// lwload's dtype table names, checked against ggml's type traits (block size, type size); other
// formats' F32, F16, BF16, F64, I8, I16, I32 and I64 tensors get the ggml type of the same name.
// Shapes become ggml's `ne` (GGUF: as stored; row-major formats: reversed, so ne[0] is the innermost
// dimension), at most 4 of them. Any other tensor is refused before anything is loaded, with
// Error(unsupported) naming it — so is one whose bytes are not its dense tensor's (a TFLite tensor
// stored sparse, unless the model was opened with OpenOptions::densify). Tensors the load skips
// (LoadOptions::plan.only, empty ones) are not in the context.
#pragma once

// Adapter ggml's public header: on the public API alone, outside the layer table
// (docs/ARCHITECTURE.md, "Layers").

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>

#include <ggml-backend.h>
#include <ggml.h>

#include "lwload/ggml.h"
#include "lwload/loader.hpp"
#include "lwload/manifest.hpp"

namespace lwload::ggml {

// The ggml type for a manifest tensor, checked against the linked ggml's type traits (a block
// layout, the same block size and type size as lwload's table); Error(unsupported) naming the tensor
// and the type when it has none. `format` is Manifest::format.
ggml_type type_of(const TensorInfo& tensor, std::string_view format);

// An lwload device over a ggml device ("ggml:INDEX"). Mechanism only; what it reports decides:
// - Imports (zero_copy) go through ggml_backend_dev_buffer_from_host_ptr, which ggml calls without
//   checking that the device has the entry (CUDA, HIP, CANN, RPC and others leave it NULL): the
//   entry is read from the device's interface table (ggml-backend-impl.h, same interface version)
//   and a device without it is never asked, whatever its caps or overrides say. A device with it is
//   probed once here, with read-only file pages at alignments from a page up: the first alignment
//   accepted is the import alignment and size multiple; none (OpenCL and SYCL answer NULL) means no
//   imports. A region the device declines at load is re-planned direct or staged with the reason.
// - Allocations (direct, staged) are slices of a few shared buffers of the device's buffer type,
//   each at most its max size: drivers cap live allocations (Vulkan's maxMemoryAllocationCount,
//   often 4096), so a model of 20,000 tensors must not be 20,000 buffers. Written directly when the
//   type is a host one, else with ggml_backend_tensor_set from staging slots.
// It counts as unified memory when ggml calls it a CPU or integrated GPU, or a GPU with no PCI id
// (a SoC GPU, a software rasteriser); `overrides` change that and the other facts as for any device.
// Each tensor's native handle is an lwload_ggml_slice (NativeType "ggml_buffer_slice").
std::unique_ptr<Device> open_device(ggml_backend_dev_t device, const DeviceOverrides& overrides = {});

// Where a loaded tensor's bytes are in ggml: its buffer, their offset from the buffer's base, and
// the bytes from there to the end of its slice (what ggml may use of it). nullopt when the tensor was
// skipped or its buffer was not made by a device of open_device.
struct Place {
  ggml_backend_buffer_t buffer = nullptr;
  std::uint64_t offset = 0;
  std::uint64_t room = 0;
};
std::optional<Place> place_of(const TensorHandle& handle) noexcept;

// The loaded model, as ggml sees it. Move-only. Destruction frees, in this order: the ggml context
// (tensor records only: their data lives in the buffers), then the Weights — the ggml buffers
// (imports first let go of the pages) and only then the file mappings under them. Tensors and the
// context must not be used after that; a graph that uses them must be computed before.
class Model {
 public:
  Model(Model&&) noexcept;
  Model& operator=(Model&&) noexcept;
  ~Model();

  ggml_context* context() const noexcept;
  ggml_tensor* tensor(std::string_view name) const noexcept;  // nullptr when absent (or skipped)
  // Per manifest tensor, at its index: its ggml tensor, nullptr where skipped.
  std::span<ggml_tensor* const> tensors() const noexcept;
  const Weights& weights() const noexcept;

  struct State;
  explicit Model(std::unique_ptr<State> state);

 private:
  std::unique_ptr<State> state_;
};

// Opens a device over `device` (open_device), plans and loads the manifest onto it, and describes
// every loaded tensor in a new ggml context. Throws lwload::Error as lwload::load does, and
// Error(unsupported) for a tensor ggml has no name, type or shape for (checked before anything is
// read).
Model load(Manifest manifest, ggml_backend_dev_t device, const LoadOptions& options = {},
           const DeviceOverrides& overrides = {});

}  // namespace lwload::ggml
