// lwload's ONNX Runtime adapter (liblwload-onnxruntime, built with -Donnxruntime when ONNX Runtime is
// found): an ONNX Runtime session whose graph carries no weight bytes and whose initializers are
// the tensors lwload loaded — on the CPU, the model file's own mapped pages (zero-copy: no copy of
// the weights exists, and they are resident when the session is returned unless LoadOptions::lazy).
// It uses ONNX Runtime's public C API only, through the application's own OrtApi (entries that
// exist since ONNX Runtime 1.14), OrtEnv and OrtSessionOptions:
//   - lwload loads the model's constants onto its host device (zero_copy where the plan allows,
//     else direct: one copy in lwload's memory; Weights::plan() says which and why);
//   - each becomes an OrtValue over those bytes (CreateTensorWithDataAsOrtValue), handed to
//     OrtApi::AddInitializer on a clone of the application's session options, which makes the
//     session use the caller's buffer instead of the model's bytes;
//   - the session is created from a weightless graph (lwload/onnx.hpp) whose TensorProtos say where
//     those bytes are: the model's own file at the tensor's offset.
// The graph's references are true (the file lwload opened, at the tensor's offset), since ONNX
// Runtime checks them and its graph optimizers read some constants through them. A model in memory
// has no such file: its constants of 64 KiB or more are referenced at their address, and a model
// whose optimizations read one of those is refused with ONNX Runtime's message (open it by path or
// descriptor instead).
// Constants ONNX Runtime cannot take that way stay in the graph ONNX Runtime parses (it copies
// them, as it does today), each with its reason in routes(): constants under 1 KiB (ONNX's shape
// inference reads shape constants' values and cannot read external data), a name more than one
// constant of the model's graphs uses (AddInitializer is keyed by name alone), constants inside
// model-local functions (ONNX Runtime renames what it inlines), attribute tensors of other ops,
// typed fields (int64_data, ...: no raw bytes to refer to), sparse and STRING tensors,
// value_float/value_ints Constants, types ONNX Runtime has no element type for.
//
// Prepacking stays the application's choice: with "session.disable_prepacking" unset or "0",
// ONNX Runtime packs the weights of the ops that prepack (MatMul, Conv, ...) into memory of its
// own, as it would have from its own loading; prepacking() reports what was in force.
//
//   const OrtApi* ort = OrtGetApiBase()->GetApi(ORT_API_VERSION);
//   lwload::onnxruntime::Session s = lwload::onnxruntime::create_session(*ort, env, options,
//                                                                        lwload::open_manifest("model.onnx"));
//   ort->Run(s.get(), nullptr, input_names, inputs, n_in, output_names, n_out, outputs);
#pragma once

// Adapter onnxruntime's public header: on the public API alone, outside the layer table
// (docs/ARCHITECTURE.md, "Layers").

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include <onnxruntime_c_api.h>

#include "lwload/loader.hpp"
#include "lwload/manifest.hpp"

namespace lwload::onnxruntime {

// How ONNX Runtime receives one of the model's constants.
struct Route {
  enum class Way : std::uint8_t {
    zero_copy,  // an initializer over the model file's mapped pages
    direct,     // an initializer over lwload's host copy (Weights::plan() says why it is not zero_copy)
    in_graph,   // its bytes stay in the graph ONNX Runtime parses, which copies them (`reason`)
  };
  std::size_t tensor = 0;  // Manifest::tensors index
  std::string name;        // the name the graph gives it (AddInitializer's key)
  Way way = Way::in_graph;
  std::string reason;          // in_graph: why; otherwise the plan's reason for the placement
  const void* data = nullptr;  // zero_copy / direct: the bytes the OrtValue points at
  std::uint64_t bytes = 0;
};
std::string_view way_name(Route::Way way) noexcept;  // "zero_copy", "direct", "in_graph"

// The session and what it runs on. Move-only. Destruction releases, in this order: the OrtSession,
// the OrtValues over lwload's bytes, then the Weights (lwload's host buffers, then the file
// mappings under them) — ONNX Runtime's rule that an added initializer outlives its session. The
// OrtSession must not be released by the caller, nor used after this object is gone.
class Session {
 public:
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;
  ~Session();

  OrtSession* get() const noexcept;
  // What lwload loaded: the plan, the buffers, verify(). nullptr when no constant could be handed
  // over (every one stays in the graph; routes() says why).
  const Weights* weights() const noexcept;
  std::span<const Route> routes() const noexcept;
  bool prepacking() const noexcept;       // ONNX Runtime prepacks (the options did not disable it)
  double ready_seconds() const noexcept;  // create_session's wall time: weights resident, session made

  struct State;
  explicit Session(std::unique_ptr<State> state);

 private:
  std::unique_ptr<State> state_;
};

// Loads the constants of `manifest` (an ONNX model from any source: open_manifest,
// open_manifest_fd, open_manifest_memory) onto lwload's host device and creates an ONNX Runtime
// session over them with `api` in `env`. `options` are the application's (threads, providers,
// optimization level, prepacking); they are cloned, not changed, and may be released afterwards.
// `load` as for lwload::load (plan.force: zero_copy or direct; lazy; callbacks). Throws
// lwload::Error: the manifest's and the load's errors as lwload::load does, Error(unsupported)
// for a non-ONNX manifest, Error(device) with ONNX Runtime's message when it refuses the session.
Session create_session(const OrtApi& api, OrtEnv* env, const OrtSessionOptions* options, Manifest manifest,
                       const LoadOptions& load = {});

}  // namespace lwload::onnxruntime
