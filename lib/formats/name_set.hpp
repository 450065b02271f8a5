// A set of names held elsewhere (the manifest's tensors), for readers that must know whether a
// name is taken as they go: an open-addressing table of 32-bit ids at most half full, 8 bytes a
// name. A std::unordered_set<std::string> costs a node, a copy of the name and a bucket each
// (~80 bytes), and its inserts and frees were most of the time of opening a million-initializer
// ONNX model.
//
// The bits of a slot its ids never use (an ONNX model's ids fit 22 bits, under the default
// OpenOptions::max_tensors) hold a tag of the name's hash: a probe whose tag differs skips the
// name, which lives in a record far from the table, so looking up a new name rarely reads one
// (each read was a cache miss, and a fifth of the time of that ONNX model).
#pragma once

#include "formats/layer.hpp"

#include <algorithm>
#include <array>
#include <bit>
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
  // `id_mask`: the bits the ids inserted may use (every id & ~id_mask == 0, and no id equals
  // 0xffffffff); the rest carry tags. All bits: no tags, every probe compares names.
  explicit NameSet(std::uint32_t id_mask = kAllBits) noexcept : id_mask_(id_mask) {}

  // Every member takes name_of(id) → std::string_view: the name of each id inserted, which must
  // not change while the id is in the set (replace() first).
  template <typename NameOf>
  bool contains(std::string_view name, NameOf name_of) const {
    if (slots_.empty()) return false;
    const std::size_t hash = hash_of(name);
    const std::uint32_t tag = tag_of(hash);
    for (std::size_t s = slot_of(hash);; s = next(s)) {
      if (slots_[s] == kEmpty) return false;
      if ((slots_[s] & ~id_mask_) == tag && name_of(slots_[s] & id_mask_) == name) return true;
    }
  }

  // Adds `id`, whose name is not in the set yet.
  template <typename NameOf>
  void insert(std::uint32_t id, NameOf name_of) {
    if (id == kEmpty || (id & ~id_mask_) != 0) fail(ErrorCode::unsupported, "name set: id ", id, " out of its range");
    if (2 * (count_ + 1) > slots_.size()) grow(name_of);
    place(id, hash_of(name_of(id)));
    ++count_;
  }

  // Fetches the slot where a probe for `name` starts into the cache, ahead of the probe: a reader
  // that knows a name some work before it adds it (ONNX reads a tensor's name before its data
  // fields) hides the table's cache miss, most of the time of adding a name to a large set.
  void prefetch(std::string_view name) const noexcept {
    if (!slots_.empty()) __builtin_prefetch(&slots_[slot_of(hash_of(name))]);
  }

  // The slot holding `id` holds `other`, of the same name, instead: `id` may then change its name.
  template <typename NameOf>
  void replace(std::uint32_t id, std::uint32_t other, NameOf name_of) {
    if ((other & ~id_mask_) != 0) fail(ErrorCode::unsupported, "name set: id ", other, " out of its range");
    for (std::size_t s = slot_of(hash_of(name_of(id)));; s = next(s)) {
      if (slots_[s] == kEmpty) return;  // not in the set
      if ((slots_[s] & id_mask_) == id) {
        slots_[s] = (slots_[s] & ~id_mask_) | other;
        return;
      }
    }
  }

 private:
  static constexpr std::uint32_t kEmpty = std::numeric_limits<std::uint32_t>::max();
  static constexpr std::uint32_t kAllBits = kEmpty;

  static std::size_t hash_of(std::string_view name) noexcept { return std::hash<std::string_view>{}(name); }
  std::size_t slot_of(std::size_t hash) const noexcept { return hash & (slots_.size() - 1); }
  std::size_t next(std::size_t s) const noexcept { return (s + 1) & (slots_.size() - 1); }
  // The tag bits, from the hash's top half (the slot comes from its bottom): never all ones, so a
  // tagged id is never kEmpty.
  std::uint32_t tag_of(std::size_t hash) const noexcept {
    const std::uint32_t tag_bits = ~id_mask_;
    std::uint32_t tag = static_cast<std::uint32_t>(static_cast<std::uint64_t>(hash) >> 32) & tag_bits;
    if (tag == tag_bits) tag &= tag - 1;  // clears the lowest tag bit
    return tag;
  }

  void place(std::uint32_t id, std::size_t hash) {
    std::size_t s = slot_of(hash);
    while (slots_[s] != kEmpty) s = next(s);
    slots_[s] = id | tag_of(hash);
  }

  // Re-adds every id to a table twice the size, in the order of the ids where they are small: a
  // name lives in a record of its own (a tensor of the manifest, whose position is its id), and
  // reading the records in order streams them where the old table's order costs a cache miss a
  // name (measured: a tenth of the time of a million-initializer ONNX model). A bitmap of the
  // small ids costs a bit each; larger ids (ONNX's kept names) follow in table order.
  template <typename NameOf>
  void grow(NameOf name_of) {
    std::vector<std::uint32_t> old(std::max<std::size_t>(16, 2 * slots_.size()), kEmpty);
    old.swap(slots_);
    const std::size_t small = 64 * (count_ / 64 + 1);  // ids below this go through the bitmap
    std::vector<std::uint64_t> present(small / 64);
    for (const std::uint32_t slot : old) {
      if (slot == kEmpty) continue;
      const std::uint32_t id = slot & id_mask_;
      if (id < small) present[id / 64] |= std::uint64_t{1} << (id % 64);
      else place(id, hash_of(name_of(id)));
    }
    // A word's ids at a time: their slots are fetched ahead, then filled (the fills' cache misses
    // overlap instead of waiting one after the other).
    std::array<std::pair<std::uint32_t, std::size_t>, 64> batch;
    for (std::size_t word = 0; word < present.size(); ++word) {
      std::size_t n = 0;
      for (std::uint64_t bits = present[word]; bits != 0; bits &= bits - 1) {
        const auto id = static_cast<std::uint32_t>(64 * word + static_cast<std::size_t>(std::countr_zero(bits)));
        const std::size_t hash = hash_of(name_of(id));
        __builtin_prefetch(&slots_[slot_of(hash)], 1);
        batch[n++] = {id, hash};
      }
      for (std::size_t i = 0; i < n; ++i) place(batch[i].first, batch[i].second);
    }
  }

  std::uint32_t id_mask_;
  std::vector<std::uint32_t> slots_;
  std::size_t count_ = 0;
};

}  // namespace lwload::formats
