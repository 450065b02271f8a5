#include "plan/schedule.hpp"

#include "plan/replan.hpp"

#include <algorithm>
#include <optional>

#include "core/align.hpp"
#include "core/checked.hpp"
#include "io/io_engine.hpp"
#include "lwload/error.hpp"

namespace lwload::plan {
namespace {

constexpr std::uint64_t kDirectChunk = 16ull << 20;  // one read per 16 MiB into a direct buffer
// Direct tensors under 64 KiB are read in runs of up to 1 MiB and copied into their buffers: a
// syscall per one-element tensor cost 8x the zero-copy load of a million of them. At most
// kRunScratch of scratch in flight, so the host cost stays a few MiB whatever the model.
constexpr std::uint64_t kSmallDirect = 64 * 1024;
constexpr std::uint64_t kDirectRun = 1 << 20;
constexpr std::uint64_t kRunScratch = 4 << 20;

// O_DIRECT for staged reads, or not: as asked, else by how much of the staged tensors' files is
// cached. Cold, buffered reads would copy every byte through the cache (and evict what the
// application has there); warm, O_DIRECT would read from the disk what memory already holds.
// Staged reads land in page-aligned slots with a block of slack at each end for the unaligned head
// and tail, so a slot must hold at least three blocks.
void choose_direct_io(const Manifest& manifest, Plan& plan) {
  plan.direct_io = false;
  std::vector<bool> staged_file(manifest.files.size(), false);
  bool any_staged = false;
  for (std::size_t i = 0; i < plan.tensors.size(); ++i) {
    if (plan.tensors[i].placement != Placement::staged) continue;
    any_staged = true;
    for (const Piece& piece : manifest.tensors[i].pieces) staged_file[piece.file] = true;
  }
  const std::optional<bool> asked = plan.options.direct_io;
  if (!any_staged) {
    plan.direct_io_reason = asked == true ? "asked for, but nothing is staged" : "nothing is staged";
    return;
  }
  if (asked == false) {
    plan.direct_io_reason = "buffered, as asked (--direct-io=false)";
    return;
  }
  if (plan.slot_bytes < 3 * kDirectIoAlignment) {
    plan.direct_io_reason = str("buffered: staging slots of ", plan.slot_bytes, " bytes are too small for O_DIRECT");
    return;
  }
  if (asked == true) {
    plan.direct_io = true;
    plan.direct_io_reason = "asked for (--direct-io)";
    return;
  }
  std::uint64_t span = 0, cached = 0;
  for (std::size_t f = 0; f < staged_file.size(); ++f) {
    if (!staged_file[f] || f >= plan.residency.size() || !plan.residency[f].known) continue;
    span = checked_add(span, plan.residency[f].span, "staged file span");
    cached = checked_add(cached, plan.residency[f].cached, "staged file span");
  }
  if (span == 0) {
    plan.direct_io_reason = "buffered: the page cache is unknown for these files";
    return;
  }
  // cached ≤ span; divided first, so a span of many TiB does not wrap the product.
  const unsigned percent =
      static_cast<unsigned>(std::min<std::uint64_t>(100, span >= 100 ? cached / (span / 100) : cached * 100 / span));
  plan.direct_io = cached < span - cached;
  plan.direct_io_reason =
      plan.direct_io ? str("O_DIRECT: ", percent, "% of the staged tensors' file bytes are in the page cache (cold)")
                     : str("buffered: ", percent, "% of the staged tensors' file bytes are in the page cache");
}

void choose_engine(Plan& plan) {
  Schedule& s = plan.schedule;
  const std::uint32_t slots = plan.staging_slots ? plan.staging_slots : 4;
  s.queue_depth = std::clamp(slots, 2u, 8u);
  s.threads = plan.options.io_threads ? plan.options.io_threads : std::clamp(slots, 2u, 4u);
  s.engine = IoEngine::pread;
  // auto reads with the pread pool: io_uring completes buffered reads that hit the page cache
  // inline on the one submitting thread, so several pread threads beat it warm (2 GiB, null
  // staged: 141 % vs 82 % of single-threaded pread) and matched or beat it with O_DIRECT cold.
  switch (plan.options.io) {
    case IoEngine::auto_:
      s.engine_reason = "auto: the pread pool (faster than io_uring here; --io io_uring to choose it)";
      break;
    case IoEngine::pread: s.engine_reason = "pread, as asked"; break;
    case IoEngine::io_uring:
      if (const auto& probe = io::probe_io_uring(); probe.usable) {
        s.engine = IoEngine::io_uring;
        s.engine_reason = "io_uring, as asked";
      } else {
        s.engine_reason = str("io_uring not used: ", probe.note);
      }
      break;
  }
}

// The reads, queued per file in load order (plan.hpp, Schedule). Staged reads read through gaps of
// up to kBridgedGap to join neighbours; so do runs.
class ReadQueues {
 public:
  ReadQueues(const Manifest& manifest, const Plan& plan)
      : manifest_(manifest),
        plan_(plan),
        queues_(manifest.files.size() + 1),
        batch_(manifest.files.size()),
        run_(manifest.files.size()) {
    staged_chunk_ = plan.slot_bytes - (plan.direct_io ? 2 * kDirectIoAlignment : 0);
  }

  std::vector<std::vector<Read>> build() && {
    for (std::size_t i = 0; i < plan_.tensors.size(); ++i) {
      const Placement p = plan_.tensors[i].placement;
      if (p != Placement::direct && p != Placement::staged) continue;
      if (manifest_.tensors[i].encoding != Encoding::raw) {
        decoded(i, p);
        continue;
      }
      std::uint64_t dst = 0;
      for (const Piece& piece : manifest_.tensors[i].pieces) {
        if (p == Placement::staged) staged(i, piece, dst);
        else if (piece.length < kSmallDirect) small_direct(i, piece, dst);
        else direct(i, piece, dst);
        dst += piece.length;
      }
    }
    for (std::uint32_t f = 0; f < batch_.size(); ++f) close(batch_[f]), close(run_[f]);
    // The extent each read asks the file for: O_DIRECT reads whole blocks (the one place the
    // aligned head and tail are worked out); every other read exactly its bytes.
    for (auto& queue : queues_)
      for (Read& read : queue) {
        const bool aligned = plan_.direct_io && read.kind == Read::Kind::staged && !read.decoded;
        read.extent_offset = aligned ? align_down(read.offset, kDirectIoAlignment) : read.offset;
        read.extent_length =
            aligned ? align_up(read.offset + read.length, kDirectIoAlignment) - read.extent_offset : read.length;
      }
    return std::move(queues_);
  }

 private:
  // Decoded tensors: their bytes exist only after decoding (one item when direct, slot-sized
  // chunks of the decoded bytes when staged), in the last queue.
  void decoded(std::size_t tensor, Placement p) {
    const std::uint64_t bytes = manifest_.tensors[tensor].bytes;
    const std::uint64_t chunk = p == Placement::staged ? staged_chunk_ : bytes;
    for (std::uint64_t at = 0; at < bytes; at += std::min(chunk, bytes - at)) {  // never wraps
      Read read{p == Placement::staged ? Read::Kind::staged : Read::Kind::direct,
                true,
                0,
                at,
                std::min(chunk, bytes - at),
                {}};
      read.segments.push_back({tensor, 0, at, read.length});
      queues_.back().push_back(std::move(read));
    }
  }

  void direct(std::size_t tensor, const Piece& piece, std::uint64_t dst) {
    for (std::uint64_t at = 0; at < piece.length; at += std::min(kDirectChunk, piece.length - at)) {
      Read read{
          Read::Kind::direct, false, piece.file, piece.offset + at, std::min(kDirectChunk, piece.length - at), {}};
      read.segments.push_back({tensor, 0, dst + at, read.length});
      queues_[piece.file].push_back(std::move(read));
    }
  }

  void small_direct(std::size_t tensor, const Piece& piece, std::uint64_t dst) {
    std::optional<Read>& run = run_[piece.file];
    if (run && !joins(*run, piece.offset, piece.offset + piece.length - run->offset <= kDirectRun)) close(run);
    if (!run) run = Read{Read::Kind::run, false, piece.file, piece.offset, 0, {}};
    run->segments.push_back({tensor, piece.offset - run->offset, dst, piece.length});
    run->length = piece.offset + piece.length - run->offset;
  }

  void staged(std::size_t tensor, const Piece& piece, std::uint64_t dst) {
    std::optional<Read>& batch = batch_[piece.file];
    for (std::uint64_t at = 0; at < piece.length;) {
      const std::uint64_t offset = piece.offset + at;
      if (batch && !joins(*batch, offset, offset - batch->offset < staged_chunk_)) close(batch);
      if (!batch) batch = Read{Read::Kind::staged, false, piece.file, offset, 0, {}};
      const std::uint64_t start = offset - batch->offset;
      const std::uint64_t take = std::min(piece.length - at, staged_chunk_ - start);
      batch->segments.push_back({tensor, start, dst + at, take});
      batch->length = start + take;
      at += take;
      if (batch->length == staged_chunk_) close(batch);
    }
  }

  // `offset` continues the open read across a gap small enough to read through, and `fits`.
  static bool joins(const Read& open, std::uint64_t offset, bool fits) {
    const std::uint64_t end = open.offset + open.length;
    return offset >= end && offset - end <= kBridgedGap && fits;
  }

  void close(std::optional<Read>& open) {
    if (open) queues_[open->file].push_back(std::move(*open));
    open.reset();
  }

  const Manifest& manifest_;
  const Plan& plan_;
  std::uint64_t staged_chunk_ = 0;
  std::vector<std::vector<Read>> queues_;
  std::vector<std::optional<Read>> batch_;  // the staged read being filled, per file
  std::vector<std::optional<Read>> run_;    // the direct run being filled, per file
};

}  // namespace

void schedule(const Manifest& manifest, Plan& plan) {
  choose_direct_io(manifest, plan);
  choose_engine(plan);
  plan.schedule.run_scratch = kRunScratch;
  plan.schedule.queues = ReadQueues(manifest, plan).build();
}

// The load found a mechanism the plan chose unusable before its first read: the plan is made again
// without it, so what it says is what runs. The reads change with O_DIRECT (staged reads lose the
// slack an unaligned head and tail needed); the engine changes nothing else.
void replan_refused(const Manifest& manifest, Plan& plan, const LoadRefusals& refused) {
  if (!refused.direct_io.empty() && plan.direct_io) {
    plan.direct_io = false;
    plan.direct_io_reason =
        str("buffered: O_DIRECT refused at load (", refused.direct_io, "); planned: ", plan.direct_io_reason);
    plan.schedule.queues = ReadQueues(manifest, plan).build();
  }
  if (!refused.engine.empty() && plan.schedule.engine == IoEngine::io_uring) {
    plan.schedule.engine = IoEngine::pread;
    plan.schedule.engine_reason = str("io_uring not used: refused at load (", refused.engine, "); the pread pool");
  }
}

}  // namespace lwload::plan
