// Tensor name → position, for Weights::find: an open-addressing table of 32-bit positions over
// names stored elsewhere (the manifest's). 8 bytes per tensor at most half full, where a
// std::unordered_map<std::string_view, std::size_t> costs ~56 (a node each, and buckets). The
// bits a position leaves free hold a tag of the name's hash, so a probe reads a name (in a record
// far from the table: a cache miss) only when the tags agree.
#pragma once

#include "loading/layer.hpp"

#include <bit>
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
    const int bits = count < 2 ? 0 : std::bit_width(count - 1);
    position_mask_ = bits >= 32 ? kEmpty : (std::uint32_t{1} << bits) - 1;
    for (std::size_t i = 0; i < count; ++i) {
      const std::string_view name = name_of(i);
      const std::size_t hash = hash_of(name);
      const std::uint32_t tag = tag_of(hash);
      for (std::size_t s = slot_of(hash);; s = next(s)) {
        if (slots_[s] == kEmpty) {
          slots_[s] = static_cast<std::uint32_t>(i) | tag;
          break;
        }
        if ((slots_[s] & ~position_mask_) == tag && name_of(slots_[s] & position_mask_) == name) break;
      }
    }
  }

  // The position indexed under `name`, or npos.
  template <typename NameOf>
  std::size_t find(std::string_view name, NameOf name_of) const noexcept {
    if (slots_.empty()) return npos;
    const std::size_t hash = hash_of(name);
    const std::uint32_t tag = tag_of(hash);
    for (std::size_t s = slot_of(hash);; s = next(s)) {
      if (slots_[s] == kEmpty) return npos;
      if ((slots_[s] & ~position_mask_) == tag && name_of(slots_[s] & position_mask_) == name)
        return slots_[s] & position_mask_;
    }
  }

 private:
  static constexpr std::uint32_t kEmpty = std::numeric_limits<std::uint32_t>::max();
  static std::size_t hash_of(std::string_view name) noexcept { return std::hash<std::string_view>{}(name); }
  std::size_t slot_of(std::size_t hash) const noexcept { return hash & (slots_.size() - 1); }
  std::size_t next(std::size_t s) const noexcept { return (s + 1) & (slots_.size() - 1); }
  // From the hash's top half (the slot comes from its bottom); never all the free bits, so a
  // tagged position is never kEmpty.
  std::uint32_t tag_of(std::size_t hash) const noexcept {
    std::uint32_t tag = static_cast<std::uint32_t>(static_cast<std::uint64_t>(hash) >> 32) & ~position_mask_;
    if (tag == ~position_mask_) tag &= tag - 1;
    return tag;
  }

  std::vector<std::uint32_t> slots_;
  std::uint32_t position_mask_ = kEmpty;  // the bits positions use
};

}  // namespace lwload::loading
