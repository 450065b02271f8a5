// The data phase's to-do list: file reads for direct and staged tensors, cut into chunks and
// queued per file (so several files can be read at once), in load order within each file.
// Staged reads coalesce neighbouring tensors into one slot-sized read; each part of it is a
// Segment uploaded to its own tensor.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "lwload/manifest.hpp"
#include "lwload/plan.hpp"

namespace lwload::loading {

// A part of a staged read that belongs to one tensor.
struct Segment {
  std::size_t entry = 0;          // index into Plan::tensors
  std::uint64_t read_offset = 0;  // where it starts, relative to ReadItem::offset
  std::uint64_t dst_offset = 0;   // where it goes in the tensor's buffer
  std::uint64_t length = 0;
};

struct ReadItem {
  bool staged = false;
  std::uint32_t file = 0;
  std::uint64_t offset = 0;  // first wanted byte in the file
  std::uint64_t length = 0;  // wanted bytes from `offset` (gaps between segments included)
  // direct: the one destination
  std::size_t entry = 0;
  std::uint64_t dst_offset = 0;
  // staged: the tensors' parts
  std::vector<Segment> segments;
};

struct WorkLimits {
  std::uint64_t direct_chunk;   // largest single read into a direct buffer
  std::uint64_t staged_chunk;   // largest staged read (slot bytes minus any O_DIRECT slack)
  std::uint64_t coalesce_gap;   // staged reads read through gaps this small to join tensors
};

// Queues (one per manifest file, possibly empty) of the reads for the raw direct and staged
// tensors of `plan`. Encoded tensors are not included (they are decoded on the host).
std::vector<std::deque<ReadItem>> build_work(const Manifest& manifest, const Plan& plan, const WorkLimits& limits);

}  // namespace lwload::loading
