// `lwload profile --loader ort` (and the "ort" row of --compare): ONNX Runtime's own loading,
// profiled as lwload's is — what an ONNX Runtime application does today: CreateSession(path) with
// ONNX Runtime's default options on its CPU provider (its prepacking included). Ready when the
// session exists. Built when ONNX Runtime is (-Donnxruntime).
#pragma once

#include <chrono>
#include <string>

#include "lwload/manifest.hpp"
#include "lwload/profile.hpp"

namespace lwload::cli {

// Whether this lwload was built with ONNX Runtime (the loader is offered only then).
bool ort_loader_available() noexcept;

// Profiles ONNX Runtime's loading of the ONNX model at `path` (`manifest` is its lwload manifest,
// for the model figures). Error(unsupported) for a model that is not ONNX.
profile::Report profile_ort(const std::string& path, const Manifest& manifest, std::chrono::microseconds period);

}  // namespace lwload::cli
