#include "load/work_list.hpp"

#include <algorithm>
#include <optional>

namespace lwload::loading {

std::vector<std::deque<ReadItem>> build_work(const Manifest& manifest, const Plan& plan, const WorkLimits& limits) {
  const std::size_t encoded_queue = manifest.files.size();
  std::vector<std::deque<ReadItem>> queues(manifest.files.size() + 1);
  std::vector<std::optional<ReadItem>> open(manifest.files.size());  // the staged read being filled, per file
  std::vector<std::optional<ReadItem>> runs(manifest.files.size());  // the direct run being filled, per file
  const auto close = [&](std::uint32_t file) {
    if (open[file]) queues[file].push_back(std::move(*open[file]));
    open[file].reset();
  };
  const auto close_run = [&](std::uint32_t file) {
    if (runs[file]) queues[file].push_back(std::move(*runs[file]));
    runs[file].reset();
  };

  for (std::size_t e = 0; e < plan.tensors.size(); ++e) {
    const Entry entry{e};
    const TensorPlan& tp = plan.tensors[e];
    const TensorInfo& t = manifest.tensors[tp.tensor];
    if (tp.placement != Placement::direct && tp.placement != Placement::staged) continue;
    if (t.encoding != Encoding::raw) {
      if (tp.placement == Placement::direct) {
        ReadItem item;
        item.decoded = true;
        item.length = t.bytes;
        item.entry = entry;
        queues[encoded_queue].push_back(std::move(item));
        continue;
      }
      for (std::uint64_t at = 0; at < t.bytes; at += limits.staged_chunk) {
        ReadItem item;
        item.staged = item.decoded = true;
        item.offset = at;
        item.length = std::min(limits.staged_chunk, t.bytes - at);
        item.segments.push_back(Segment{entry, 0, at, item.length});
        queues[encoded_queue].push_back(std::move(item));
      }
      continue;
    }
    std::uint64_t dst = 0;
    for (const Piece& piece : t.pieces) {
      std::uint64_t offset = piece.offset;
      std::uint64_t left = piece.length;
      if (tp.placement == Placement::direct && left < limits.small_direct) {
        auto& run = runs[piece.file];
        if (run) {
          const std::uint64_t end = run->offset + run->length;
          const bool joins = offset >= end && offset - end <= limits.coalesce_gap &&
                             offset + left - run->offset <= limits.direct_run;
          if (!joins) close_run(piece.file);
        }
        if (!run) {
          run.emplace();
          run->run = true;
          run->file = piece.file;
          run->offset = offset;
        }
        run->segments.push_back(Segment{entry, offset - run->offset, dst, left});
        run->length = offset + left - run->offset;
        dst += left;
        continue;
      }
      while (left > 0) {
        if (tp.placement == Placement::direct) {
          ReadItem item;
          item.file = piece.file;
          item.offset = offset;
          item.length = std::min(left, limits.direct_chunk);
          item.entry = entry;
          item.dst_offset = dst;
          queues[piece.file].push_back(item);
          offset += item.length;
          dst += item.length;
          left -= item.length;
          continue;
        }
        auto& batch = open[piece.file];
        if (batch) {
          const std::uint64_t end = batch->offset + batch->length;
          const bool joins = offset >= end && offset - end <= limits.coalesce_gap &&
                             offset - batch->offset < limits.staged_chunk;
          if (!joins) close(piece.file);
        }
        if (!batch) {
          batch.emplace();
          batch->staged = true;
          batch->file = piece.file;
          batch->offset = offset;
          batch->length = 0;
        }
        const std::uint64_t start = offset - batch->offset;
        const std::uint64_t take = std::min(left, limits.staged_chunk - start);
        batch->segments.push_back(Segment{entry, start, dst, take});
        batch->length = start + take;
        offset += take;
        dst += take;
        left -= take;
        if (batch->length == limits.staged_chunk) close(piece.file);
      }
    }
  }
  for (std::uint32_t f = 0; f < open.size(); ++f) close(f), close_run(f);
  return queues;
}

}  // namespace lwload::loading
