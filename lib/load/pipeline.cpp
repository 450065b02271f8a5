#include "load/pipeline.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>

#include <algorithm>
#include <cstring>

#include "core/align.hpp"
#include "formats/encoded.hpp"
#include "io/io_engine.hpp"
#include "load/setup.hpp"
#include "lwload/error.hpp"

namespace lwload::loading {
namespace {

constexpr std::uint64_t kDirectChunk = 16ull << 20;   // one pread per 16 MiB into a direct buffer
constexpr std::uint64_t kMaxDecodeExpansion = 16;     // decoded bytes per encoded byte, at most
// Direct tensors under 64 KiB are read in runs of up to 1 MiB and copied into their buffers: a
// syscall per one-element tensor cost 8x the zero-copy load of a million of them. At most
// kRunBytesInFlight of scratch, so the host cost stays a few MiB whatever the model.
constexpr std::uint64_t kSmallDirect = 64 * 1024;
constexpr std::uint64_t kDirectRun = 1 << 20;
constexpr std::uint64_t kRunBytesInFlight = 4 << 20;

}  // namespace

DataPipeline::DataPipeline(Weights::State& state, Device& device, Progress& progress, const LoadOptions& options,
                           const OpenFiles& files,
                           const std::vector<std::size_t>& tensor_buffer)
    : state_(state), device_(device), progress_(progress), options_(options), files_(files),
      tensor_buffer_(tensor_buffer), host_(state.plan.tensors.size()) {
  const Plan& plan = state.plan;
  if (plan.count(Placement::staged) > 0) {
    ring_ = io::StagingRing(device_, plan.staging_slots, plan.slot_bytes);
    slot_uploads_.assign(ring_.slots(), 0);
  }
}

DataPipeline::~DataPipeline() {
  // run() drains before returning or throwing; this covers an exception thrown while draining.
  try {
    close_host_writes();
    if (reads_in_flight_ || uploads_in_flight_) device_.finish();
  } catch (...) {
  }
}

const TensorInfo& DataPipeline::tensor(Entry entry) const {
  return state_.manifest.tensors[state_.plan.tensors[entry.value].tensor];
}

DeviceBuffer& DataPipeline::buffer(Entry entry) const { return *state_.buffers[tensor_buffer_[entry.value]]; }

const std::filesystem::path& DataPipeline::file_path(std::uint32_t file) const { return state_.manifest.files[file]; }

void DataPipeline::record_failure(std::exception_ptr error) {
  if (!failure_) failure_ = std::move(error);
}

// O_DIRECT (staged reads only: they land in page-aligned slots with slack for the unaligned head
// and tail of each read). The open files reopened (never by path); refused → buffered reads, with
// the reason.
void DataPipeline::open_direct_files() {
  std::string why;
  if (ring_.slots() == 0) why = "nothing is staged";
  else if (ring_.slot_bytes() < 3 * kDirectIoAlignment) why = "staging slots are too small";
  else if (!ring_.aligned_to(kDirectIoAlignment)) why = "the device's staging buffers are not page-aligned";
  if (why.empty()) {
    try {
      direct_files_.resize(files_.size());
      for (std::size_t f = 0; f < files_.size(); ++f)
        if (files_[f] && !(direct_files_[f] = files_[f]->reopen(FileOpenFlags{true})))
          fail(ErrorCode::unsupported, file_path(static_cast<std::uint32_t>(f)).string(),
               ": its file system cannot reopen it for O_DIRECT");
    } catch (const std::exception& e) {
      why = str("O_DIRECT open failed: ", e.what());
      direct_files_.clear();
    }
  }
  if (why.empty())
    direct_io_ = true;
  else
    state_.io.direct_io_note = str("O_DIRECT not used: ", why);
}

void DataPipeline::choose_engine() {
  std::vector<io::ReadSource> sources(files_.size());
  bool all_descriptors = true;
  for (std::size_t f = 0; f < files_.size(); ++f) {
    if (!files_[f]) continue;
    all_descriptors = all_descriptors && files_[f]->native_handle() >= 0;
    sources[f].file = files_[f].get();
  }
  if (direct_io_)
    for (std::size_t f = 0; f < files_.size(); ++f) sources.push_back(io::ReadSource{direct_files_[f].get(), true});

  const unsigned slots = state_.plan.staging_slots ? state_.plan.staging_slots : 4;
  const unsigned depth = std::clamp(slots, 2u, 8u);
  const auto not_used = [&](const std::string& why) { state_.io.engine_note = str("io_uring not used: ", why); };
  // auto reads with the pread pool: io_uring completes buffered reads that hit the page cache
  // inline on the one submitting thread, so several pread threads beat it warm (2 GiB, null
  // staged: 141 % vs 82 % of single-threaded pread) and matched or beat it with O_DIRECT cold.
  if (options_.io == IoEngine::auto_) {
    state_.io.engine_note = "auto: the pread pool (faster than io_uring here; --io io_uring to choose it)";
  } else if (options_.io == IoEngine::io_uring) {
    const auto& probe = io::probe_io_uring();
    if (!probe.usable) {
      not_used(probe.note);
    } else if (!all_descriptors) {
      not_used("the files have no descriptors (in-memory file system)");
    } else {
      try {
        reader_ = io::make_uring_reader(context_, sources, depth);
      } catch (const std::exception& e) {
        not_used(e.what());
      }
    }
  }
  if (!reader_) {
    const unsigned threads = options_.io_threads ? options_.io_threads : std::clamp(slots, 2u, 4u);
    reader_ = io::make_pread_reader(context_, sources, threads);
  }
  state_.io.engine = reader_->engine();
}

// The direct buffer's host bytes, mapped for writing at the entry's first read.
std::span<std::byte> DataPipeline::host_span(Entry entry) {
  std::span<std::byte>& host = host_[entry.value];
  if (!host.empty()) return host;
  const std::uint64_t bytes = tensor(entry).bytes;
  const auto span = buffer(entry).begin_host_write();
  if (span.size() < bytes) {
    buffer(entry).end_host_write();
    fail(ErrorCode::device, "device ", device_.info().id(), ": host-visible buffer for tensor '", tensor(entry).name,
         "' is not writable by the host (", span.size(), " of ", bytes, " bytes)");
  }
  return host = span.first(bytes);
}

// An encoded tensor's stored bytes: its pieces read (bounded by the file, checked at setup) and
// decoded on the host. One tensor at a time: the plan's decode scratch.
std::span<const std::byte> DataPipeline::decoded(Entry entry) {
  if (decoded_entry_ == entry) return decoded_bytes_;
  const TensorInfo& t = tensor(entry);
  std::uint64_t encoded_size = 0;
  for (const Piece& piece : t.pieces) encoded_size += piece.length;
  const auto& path = file_path(t.pieces.empty() ? 0 : t.pieces[0].file);
  if (t.bytes / kMaxDecodeExpansion > encoded_size + 1)
    fail(ErrorCode::bad_input, path.string(), ": tensor '", t.name, "': ", t.bytes, " bytes cannot come from ",
         encoded_size, " encoded bytes");
  std::vector<std::byte> encoded(encoded_size);
  std::uint64_t at = 0;
  for (const Piece& piece : t.pieces) {
    files_[piece.file]->read_exact(piece.offset, std::span(encoded).subspan(at, piece.length),
                                   str("tensor '", t.name, "' data"));
    at += piece.length;
  }
  state_.stats.bytes_read += encoded_size;
  decoded_entry_ = Entry{static_cast<std::size_t>(-1)};
  decoded_bytes_.assign(t.bytes, std::byte{0});
  formats::decode_tensor(t, encoded, decoded_bytes_, path);
  decoded_entry_ = entry;
  return decoded_bytes_;
}

// `bytes` of the entry are on the device; the last of them closes its host write and makes it ready.
void DataPipeline::complete(Entry entry, std::uint64_t bytes) {
  if (!progress_.arrived(entry, bytes)) return;
  if (!host_[entry.value].empty()) {
    host_[entry.value] = {};
    buffer(entry).end_host_write();
  }
  progress_.ready(entry);
}

bool DataPipeline::idle() const {
  if (reads_in_flight_ || uploads_in_flight_) return false;
  if (failure_) return true;
  return std::all_of(queues_.begin(), queues_.end(), [](const auto& q) { return q.empty(); });
}

// Starts reads while there is room: in-flight reads below the reader's depth, and a free slot for
// staged reads. Queues take turns, so a sharded model's files are read concurrently.
void DataPipeline::pump() {
  while (!failure_ && reads_in_flight_ < reader_->concurrency()) {
    bool issued = false;
    try {
      progress_.check_cancel();
      for (std::size_t tried = 0; tried < queues_.size() && !issued; ++tried) {
        const std::size_t q = next_queue_;
        next_queue_ = (next_queue_ + 1) % queues_.size();
        if (queues_[q].empty()) continue;
        if (issue(queues_[q].front())) {
          queues_[q].pop_front();
          issued = true;
        }
      }
    } catch (...) {
      record_failure(std::current_exception());
      return;
    }
    if (!issued) return;
  }
}

bool DataPipeline::issue(ReadItem& item) {
  if (item.run) {
    if (run_bytes_in_flight_ > 0 && run_bytes_in_flight_ + item.length > kRunBytesInFlight) return false;
    for (const Segment& s : item.segments) {
      (void)host_span(s.entry);
      progress_.start(s.entry);
    }
    auto scratch = std::make_shared<std::vector<std::byte>>(item.length);
    run_bytes_in_flight_ += item.length;
    ++reads_in_flight_;
    ++state_.stats.reads;
    reader_->read(item.file, item.offset, *scratch, [this, item, scratch](std::exception_ptr error, std::size_t got) {
      on_run_read(item, *scratch, error, got);
    });
    return true;
  }
  if (!item.staged) {
    const std::span<std::byte> host = host_span(item.entry);
    progress_.start(item.entry);
    if (item.decoded) {  // decoded straight into the host-visible buffer: nothing to wait for
      const auto bytes = decoded(item.entry);
      std::memcpy(host.data(), bytes.data(), bytes.size());
      complete(item.entry, bytes.size());
      return true;
    }
    ++reads_in_flight_;
    ++state_.stats.reads;
    reader_->read(item.file, item.offset, host.subspan(item.dst_offset, item.length),
                  [this, item](std::exception_ptr error, std::size_t got) { on_direct_read(item, error, got); });
    return true;
  }
  const auto slot = ring_.acquire();
  if (!slot) return false;
  for (const Segment& s : item.segments) progress_.start(s.entry);
  if (item.decoded) {  // decoded bytes enter the slot by copy, then go the way of a read
    try {
      const auto bytes = decoded(item.segments.front().entry);
      std::memcpy(ring_.bytes(*slot).data(), bytes.data() + item.offset, item.length);
    } catch (...) {
      ring_.release(*slot);
      throw;
    }
    ++reads_in_flight_;
    boost::asio::post(context_, [this, item, slot = *slot] { on_staged_read(item, slot, 0, nullptr, item.length); });
    return true;
  }
  std::uint64_t begin = item.offset, end = item.offset + item.length;
  std::size_t source = item.file;
  if (direct_io_) {
    begin = align_down(begin, kDirectIoAlignment);
    end = align_up(end, kDirectIoAlignment);
    source += files_.size();  // the O_DIRECT twin
  }
  ++reads_in_flight_;
  ++state_.stats.reads;
  const std::uint64_t head = item.offset - begin;
  reader_->read(source, begin, ring_.bytes(*slot).first(end - begin),
                [this, item, slot = *slot, head](std::exception_ptr error, std::size_t got) {
                  on_staged_read(item, slot, head, error, got);
                });
  return true;
}

void DataPipeline::on_direct_read(const ReadItem& item, std::exception_ptr error, std::size_t got) {
  --reads_in_flight_;
  state_.stats.bytes_read += got;
  try {
    if (error) std::rethrow_exception(error);
    if (got < item.length)
      fail(ErrorCode::bad_input, file_path(item.file).string(), ": tensor '", tensor(item.entry).name,
           "': needs bytes [", item.offset, ", ", item.offset + item.length, ") but the file ends at ",
           item.offset + got, " (truncated during the load?)");
    if (!failure_) {
      progress_.event(LoadEvent::Kind::bytes_read, item.entry, got);
      complete(item.entry, item.length);
    }
  } catch (...) {
    record_failure(std::current_exception());
  }
  pump();
}

void DataPipeline::on_run_read(const ReadItem& item, std::span<const std::byte> scratch, std::exception_ptr error,
                               std::size_t got) {
  --reads_in_flight_;
  run_bytes_in_flight_ -= item.length;
  state_.stats.bytes_read += got;
  try {
    if (error) std::rethrow_exception(error);
    for (const Segment& s : item.segments) {
      if (s.read_offset + s.length > got)
        fail(ErrorCode::bad_input, file_path(item.file).string(), ": tensor '", tensor(s.entry).name, "': needs bytes [",
             item.offset + s.read_offset, ", ", item.offset + s.read_offset + s.length, ") but the file ends at ",
             item.offset + got, " (truncated during the load?)");
      if (failure_) break;
      std::memcpy(host_span(s.entry).data() + s.dst_offset, scratch.data() + s.read_offset, s.length);
      progress_.event(LoadEvent::Kind::bytes_read, s.entry, s.length);
      complete(s.entry, s.length);
    }
  } catch (...) {
    record_failure(std::current_exception());
  }
  pump();
}

void DataPipeline::on_staged_read(const ReadItem& item, std::size_t slot, std::uint64_t head,
                                  std::exception_ptr error, std::size_t got) {
  --reads_in_flight_;
  if (!item.decoded) state_.stats.bytes_read += got;
  try {
    if (error) std::rethrow_exception(error);
    if (got < head + item.length) {
      const std::uint64_t have = got > head ? got - head : 0;
      const Segment* short_segment = &item.segments.front();
      for (const Segment& s : item.segments)
        if (s.read_offset + s.length > have) {
          short_segment = &s;
          break;
        }
      fail(ErrorCode::bad_input, file_path(item.file).string(), ": tensor '", tensor(short_segment->entry).name,
           "': needs bytes up to ", item.offset + short_segment->read_offset + short_segment->length,
           " but the file ends at ", item.offset + have, " (truncated during the load?)");
    }
    if (!failure_) {
      progress_.in_flight += item.length;
      progress_.event(LoadEvent::Kind::bytes_read, item.segments.front().entry, item.length);
      StagingBuffer& staging = ring_.buffer(slot);
      for (const Segment& s : item.segments) {
        ++slot_uploads_[slot];
        ++uploads_in_flight_;
        // Never throws: a failure of any kind comes back through the callback, once.
        device_.upload(staging, head + s.read_offset, buffer(s.entry), s.dst_offset, s.length,
                       [this, slot, s](std::exception_ptr err) {
                         boost::asio::post(context_, [this, slot, s, err] { on_upload_done(slot, s, err); });
                       });
        ++state_.stats.uploads;
        state_.stats.bytes_uploaded += s.length;
      }
    }
  } catch (...) {
    record_failure(std::current_exception());
  }
  if (slot_uploads_[slot] == 0) ring_.release(slot);
  pump();
}

void DataPipeline::on_upload_done(std::size_t slot, const Segment& segment, std::exception_ptr error) {
  --uploads_in_flight_;
  progress_.in_flight -= segment.length;
  if (--slot_uploads_[slot] == 0) ring_.release(slot);
  try {
    if (error) std::rethrow_exception(error);
    if (!failure_) {
      progress_.event(LoadEvent::Kind::bytes_uploaded, segment.entry, segment.length);
      complete(segment.entry, segment.length);
    }
  } catch (...) {
    record_failure(std::current_exception());
  }
  pump();
}

void DataPipeline::wait_until_idle() {
  context_.restart();  // a context that ran out of work before is stopped until restarted
  auto guard = boost::asio::make_work_guard(context_);
  while (!idle()) context_.run_one();
}

void DataPipeline::close_host_writes() noexcept {
  for (std::size_t e = 0; e < host_.size(); ++e) {
    if (host_[e].empty()) continue;
    host_[e] = {};
    try {
      state_.buffers[tensor_buffer_[e]]->end_host_write();
    } catch (...) {
    }
  }
}

void DataPipeline::run() {
  if (state_.plan.direct_io) open_direct_files();
  WorkLimits limits;
  limits.direct_chunk = kDirectChunk;
  limits.staged_chunk = ring_.slot_bytes() - (direct_io_ ? 2 * kDirectIoAlignment : 0);
  limits.coalesce_gap = kBridgedGap;  // staged reads read through padding this small
  limits.small_direct = kSmallDirect;
  limits.direct_run = kDirectRun;
  if (ring_.slots() == 0) limits.staged_chunk = kDirectChunk;  // unused: nothing is staged
  queues_ = build_work(state_.manifest, state_.plan, limits);
  if (!idle()) {
    choose_engine();
    pump();
    wait_until_idle();
  }
  decoded_bytes_ = {};
  state_.io.direct_io = direct_io_;
  if (failure_) {
    close_host_writes();
    try {
      device_.finish();
    } catch (...) {
    }
    std::rethrow_exception(failure_);
  }
  progress_.phase("finish");
  device_.finish();
}

}  // namespace lwload::loading
