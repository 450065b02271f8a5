// `lwload profile --compare`: every loader runs in its own child process (this same binary,
// `lwload profile MODEL --loader naive|ggml|ort|lwload ... --json FILE`), so each starts from a fresh
// process — no loader inherits another's heap, page tables or allocator caches — and all are
// measured by the same sampler and report code.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "lwload/profile.hpp"

namespace lwload::cli {

// One loader to run: "naive", "ggml" (ggml's own loading, profile_ggml.hpp), "ort" (ONNX Runtime's
// own loading, profile_ort.hpp), or an lwload placement ("auto", "zero-copy", "direct", "staged").
// Returns each child's report, labelled, in the order given. `forwarded` are the options every
// child gets (device, budget, period, ...). Throws Error(usage) for an unknown loader and
// Error(device) when a child fails to produce a report.
struct Comparison {
  std::vector<profile::Series> series;
  std::vector<std::string> reports_json;  // each child's report as it wrote it (tensors included)
};
Comparison run_comparison(const std::string& model, const std::vector<std::string>& loaders,
                          const std::vector<std::string>& forwarded);

// A loader that is not lwload's: "naive", "ggml" or "ort" (`profile --loader`).
inline bool is_baseline_loader(std::string_view loader) noexcept {
  return loader == "naive" || loader == "ggml" || loader == "ort";
}

// "naive,direct" → {"naive", "direct"}, each checked.
std::vector<std::string> parse_compare_list(const std::string& text);

}  // namespace lwload::cli
