// Tensor name → position, for Weights::find: an open-addressing table of 32-bit positions over
// names stored elsewhere (the manifest's). 8 bytes per tensor at most half full, where a
// std::unordered_map<std::string_view, std::size_t> costs ~56 (a node each, and buckets).
#pragma once

#include "loading/layer.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <string_view>
#include <vector>

#include "lwload/error.hpp"

namespace lwload::loading {

class NameIndex {
 public:
  static constexpr std::size_t npos = std::numeric_limits<std::size_t>::max();

  // Indexes positions [0, count) under name_of(position); a repeated name keeps its first position.
  template <typename NameOf>
  void build(std::size_t count, NameOf name_of) {
    if (count >= kEmpty) fail(ErrorCode::usage, "cannot index ", count, " tensors by name: at most 2^32 - 2");
    std::size_t slots = 4;
    while (slots < 2 * count) slots *= 2;
    slots_.assign(slots, kEmpty);
    for (std::size_t i = 0; i < count; ++i) {
      const std::string_view name = name_of(i);
      for (std::size_t s = slot_of(name);; s = next(s)) {
        if (slots_[s] == kEmpty) {
          slots_[s] = static_cast<std::uint32_t>(i);
          break;
        }
        if (name_of(slots_[s]) == name) break;
      }
    }
  }

  // The position indexed under `name`, or npos.
  template <typename NameOf>
  std::size_t find(std::string_view name, NameOf name_of) const noexcept {
    if (slots_.empty()) return npos;
    for (std::size_t s = slot_of(name);; s = next(s)) {
      if (slots_[s] == kEmpty) return npos;
      if (name_of(slots_[s]) == name) return slots_[s];
    }
  }

 private:
  static constexpr std::uint32_t kEmpty = std::numeric_limits<std::uint32_t>::max();
  std::size_t slot_of(std::string_view name) const noexcept {
    return std::hash<std::string_view>{}(name) & (slots_.size() - 1);
  }
  std::size_t next(std::size_t s) const noexcept { return (s + 1) & (slots_.size() - 1); }

  std::vector<std::uint32_t> slots_;
};

}  // namespace lwload::loading
