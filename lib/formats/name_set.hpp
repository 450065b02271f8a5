// A set of names held elsewhere (the manifest's tensors), for readers that must know whether a
// name is taken as they go: an open-addressing table of 32-bit ids at most half full, 8 bytes a
// name. A std::unordered_set<std::string> costs a node, a copy of the name and a bucket each
// (~80 bytes), and its inserts and frees were most of the time of opening a million-initializer
// ONNX model.
#pragma once

#include "formats/layer.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <string_view>
#include <vector>

#include "lwload/error.hpp"

namespace lwload::formats {

class NameSet {
 public:
  // Every member takes name_of(id) → std::string_view: the name of each id inserted, which must
  // not change while the id is in the set (replace() first).
  template <typename NameOf>
  bool contains(std::string_view name, NameOf name_of) const {
    if (slots_.empty()) return false;
    for (std::size_t s = slot_of(name);; s = next(s)) {
      if (slots_[s] == kEmpty) return false;
      if (name_of(slots_[s]) == name) return true;
    }
  }

  // Adds `id`, whose name is not in the set yet.
  template <typename NameOf>
  void insert(std::uint32_t id, NameOf name_of) {
    if (id == kEmpty) fail(ErrorCode::unsupported, "more than 2^32 - 2 names in one set");
    if (2 * (count_ + 1) > slots_.size()) grow(name_of);
    place(id, name_of(id));
    ++count_;
  }

  // The slot holding `id` holds `other`, of the same name, instead: `id` may then change its name.
  template <typename NameOf>
  void replace(std::uint32_t id, std::uint32_t other, NameOf name_of) {
    for (std::size_t s = slot_of(name_of(id));; s = next(s)) {
      if (slots_[s] == kEmpty) return;  // not in the set
      if (slots_[s] == id) {
        slots_[s] = other;
        return;
      }
    }
  }

 private:
  static constexpr std::uint32_t kEmpty = std::numeric_limits<std::uint32_t>::max();

  std::size_t slot_of(std::string_view name) const noexcept {
    return std::hash<std::string_view>{}(name) & (slots_.size() - 1);
  }
  std::size_t next(std::size_t s) const noexcept { return (s + 1) & (slots_.size() - 1); }

  void place(std::uint32_t id, std::string_view name) {
    std::size_t s = slot_of(name);
    while (slots_[s] != kEmpty) s = next(s);
    slots_[s] = id;
  }

  template <typename NameOf>
  void grow(NameOf name_of) {
    std::vector<std::uint32_t> old(std::max<std::size_t>(16, 2 * slots_.size()), kEmpty);
    old.swap(slots_);
    for (const std::uint32_t id : old)
      if (id != kEmpty) place(id, name_of(id));
  }

  std::vector<std::uint32_t> slots_;
  std::size_t count_ = 0;
};

}  // namespace lwload::formats
