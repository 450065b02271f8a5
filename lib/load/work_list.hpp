// The data phase's to-do list: reads for direct and staged tensors, cut into chunks and queued per
// file (so several files can be read at once), in load order within each file. Staged reads
// coalesce neighbouring tensors into one slot-sized read; each part of it is a Segment uploaded to
// its own tensor. Small direct tensors coalesce the same way into runs (a million one-element
// tensors are a few hundred reads, not a million), each Segment copied into its tensor's buffer. Encoded tensors (ONNX typed fields) are items of one more queue, after the
// files': their bytes come from decoding, not from one read, and then take the same way.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "load/positions.hpp"
#include "lwload/manifest.hpp"
#include "lwload/plan.hpp"

namespace lwload::loading {

// A part of a staged read that belongs to one tensor.
struct Segment {
  Entry entry;
  std::uint64_t read_offset = 0;  // where it starts, relative to ReadItem::offset
  std::uint64_t dst_offset = 0;   // where it goes in the tensor's buffer
  std::uint64_t length = 0;
};

struct ReadItem {
  bool staged = false;
  bool run = false;          // direct tensors too small for a read each: read together, segments copied
  bool decoded = false;      // the bytes come from decoding the tensor (offset: into the decoded bytes)
  std::uint32_t file = 0;
  std::uint64_t offset = 0;  // first wanted byte in the file
  std::uint64_t length = 0;  // wanted bytes from `offset` (gaps between segments included)
  // direct: the one destination
  Entry entry;
  std::uint64_t dst_offset = 0;
  // staged and run: the tensors' parts
  std::vector<Segment> segments;
};

struct WorkLimits {
  std::uint64_t direct_chunk;   // largest single read into a direct buffer
  std::uint64_t staged_chunk;   // largest staged read (slot bytes minus any O_DIRECT slack)
  std::uint64_t coalesce_gap;   // staged reads and runs read through gaps this small to join tensors
  std::uint64_t small_direct;   // direct tensors smaller than this join runs...
  std::uint64_t direct_run;     // ...of at most this many bytes, read into scratch and copied
};

// Queues for the direct and staged tensors of `plan`: one per manifest file (possibly empty), then
// one for the encoded tensors (a direct one is a single item; a staged one, slot-sized chunks).
std::vector<std::deque<ReadItem>> build_work(const Manifest& manifest, const Plan& plan, const WorkLimits& limits);

}  // namespace lwload::loading
