// The two kinds of position the loader handles, kept apart by type so they cannot be mixed up:
// an Entry is a position in Plan::tensors — the load order, which also indexes Weights' handles
// and the loader's per-tensor state — while a manifest index (TensorPlan::tensor, a size_t) is a
// position in Manifest::tensors.
#pragma once

#include <cstddef>

namespace lwload::loading {

struct Entry {
  std::size_t value = 0;
  friend bool operator==(Entry, Entry) = default;
};

}  // namespace lwload::loading
