#include "loading/pipeline.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>

#include <cstring>
#include <limits>

#include "core/align.hpp"
#include "core/checked.hpp"
#include "formats/decode/encoded.hpp"
#include "lwload/error.hpp"
#include "plan/replan.hpp"

namespace lwload::loading {
namespace {

// Host scratch of `bytes` for tensor `t`. The one hard bound of decoding: a count past size_t (a
// 32-bit process) would wrap in the allocation, so it is refused here; everywhere RLIMIT_AS is
// known (every 32-bit process) the plan's decode rule refused it before anything was read.
std::size_t scratch_size(std::uint64_t bytes, const TensorInfo& t, const std::filesystem::path& path) {
  if (bytes > std::numeric_limits<std::size_t>::max())
    fail(ErrorCode::does_not_fit, path.string(), ": tensor '", t.name, "': decoding it needs ", bytes,
         " bytes of host scratch, more than this process can address; nothing was allocated for it");
  return static_cast<std::size_t>(bytes);
}

}  // namespace

DataPipeline::DataPipeline(Weights::State& state, Device& device, Progress& progress)
    : state_(state),
      device_(device),
      progress_(progress),
      schedule_(state.plan.schedule),
      files_(state.files),
      host_(state.plan.tensors.size()),
      next_read_(schedule_.queues.size(), 0) {
  const Plan& plan = state.plan;
  if (plan.staging_slots > 0) {
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

const TensorInfo& DataPipeline::tensor(std::size_t index) const { return state_.manifest.tensors[index]; }

DeviceBuffer& DataPipeline::buffer(std::size_t index) const { return *state_.handles[index].buffer; }

const std::filesystem::path& DataPipeline::file_path(std::uint32_t file) const { return state_.manifest.files[file]; }

void DataPipeline::record_failure(std::exception_ptr error) {
  if (!failure_) failure_ = std::move(error);
}

// O_DIRECT, as the plan chose it (staged reads only: they land in page-aligned slots with slack for
// the unaligned head and tail of each read). The open files reopened (never by path). Returns why
// the device's slots or the file system refuse it ("" when it is usable): the planner then
// re-plans the reads buffered.
std::string DataPipeline::open_direct_files() {
  std::string why;
  if (!ring_.aligned_to(kDirectIoAlignment)) why = "the device's staging buffers are not page-aligned";
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
  direct_io_ = why.empty();
  return why;
}

// The engine the plan chose. Returns why io_uring was refused at set-up (a file without a
// descriptor, a ring the kernel will not make; "" when it was not): the pool reads instead, and
// the planner re-plans the engine.
std::string DataPipeline::make_engine() {
  std::string refused;
  std::vector<io::ReadSource> sources(files_.size());
  for (std::size_t f = 0; f < files_.size(); ++f) sources[f].file = files_[f].get();
  if (direct_io_)
    for (std::size_t f = 0; f < files_.size(); ++f) sources.push_back(io::ReadSource{direct_files_[f].get(), true});
  if (schedule_.engine == IoEngine::io_uring) {
    try {
      engine_ = io::make_uring_engine(context_, sources, schedule_.queue_depth);
    } catch (const std::exception& e) {
      refused = e.what();
    }
  }
  if (!engine_) engine_ = io::make_pread_engine(context_, sources, schedule_.threads);
  return refused;
}

// The direct buffer's host bytes, mapped for writing at the tensor's first read.
std::span<std::byte> DataPipeline::host_span(std::size_t index) {
  std::span<std::byte>& host = host_[index];
  if (!host.empty()) return host;
  const std::uint64_t bytes = tensor(index).bytes;
  const auto span = buffer(index).begin_host_write();
  if (span.size() < bytes) {
    buffer(index).end_host_write();
    fail(ErrorCode::device, "device ", device_.info().id(), ": host-visible buffer for tensor '", tensor(index).name,
         "' is not writable by the host (", span.size(), " of ", bytes, " bytes)");
  }
  return host = span.first(bytes);
}

// An encoded tensor decoded into `out` (its TensorInfo::bytes): its pieces read into host scratch
// (bounded by the file, checked at setup), then decoded — into the direct buffer itself, or (staged)
// into host scratch the slots copy from. The decoders only write `out` (host-visible memory may be
// write-combined). What this holds at once, encoded + decoded bytes whatever their ratio, is what
// the plan counted and checked against the machine before anything was read (check_decodes_fit,
// Plan::decode_bytes).
void DataPipeline::decode_into(std::size_t index, std::span<std::byte> out) {
  const TensorInfo& t = tensor(index);
  const auto& path = file_path(t.pieces.empty() ? 0 : t.pieces[0].file);
  std::uint64_t encoded_size = 0;
  for (const Piece& piece : t.pieces)
    encoded_size = checked_add(encoded_size, piece.length, str("tensor '", t.name, "' encoded bytes"));
  std::vector<std::byte> encoded(scratch_size(encoded_size, t, path));
  std::uint64_t at = 0;
  for (const Piece& piece : t.pieces) {
    files_[piece.file]->read_exact(piece.offset, std::span(encoded).subspan(at, piece.length),
                                   str("tensor '", t.name, "' data"));
    at += piece.length;
  }
  state_.stats.bytes_read += encoded_size;
  state_.io.buffered_bytes += encoded_size;
  formats::decode_tensor(t, encoded, out, path);
}

// A staged encoded tensor's decoded bytes, kept while its chunks go to the slots. One tensor at a
// time: the previous one's scratch is released before the next one's is taken.
std::span<const std::byte> DataPipeline::decoded(std::size_t index) {
  if (decoded_tensor_ == index) return decoded_bytes_;
  decoded_tensor_ = static_cast<std::size_t>(-1);
  decoded_bytes_ = {};
  const TensorInfo& t = tensor(index);
  decoded_bytes_.resize(scratch_size(t.bytes, t, file_path(t.pieces.empty() ? 0 : t.pieces[0].file)));
  decode_into(index, decoded_bytes_);
  decoded_tensor_ = index;
  return decoded_bytes_;
}

// `bytes` of the tensor are on the device; the last of them closes its host write and makes it ready.
void DataPipeline::complete(std::size_t index, std::uint64_t bytes) {
  if (!progress_.arrived(index, bytes)) return;
  if (!host_[index].empty()) {
    host_[index] = {};
    buffer(index).end_host_write();
  }
  progress_.ready(index);
}

bool DataPipeline::idle() const {
  if (reads_in_flight_ || uploads_in_flight_) return false;
  if (failure_) return true;
  for (std::size_t q = 0; q < next_read_.size(); ++q)
    if (next_read_[q] < schedule_.queues[q].size()) return false;
  return true;
}

// Starts reads while there is room: in-flight reads below the engine's depth, and a free slot for
// staged reads. Queues take turns, so a sharded model's files are read concurrently.
void DataPipeline::pump() {
  while (!failure_ && reads_in_flight_ < engine_->concurrency()) {
    bool issued = false;
    try {
      progress_.check_cancel();
      const auto& queues = schedule_.queues;
      for (std::size_t tried = 0; tried < queues.size() && !issued; ++tried) {
        const std::size_t q = next_queue_;
        next_queue_ = (next_queue_ + 1) % queues.size();
        if (next_read_[q] == queues[q].size()) continue;
        if (issue(queues[q][next_read_[q]])) {
          ++next_read_[q];
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

// Reads are the plan's, which stays put while the pipeline runs: completions refer to them.
bool DataPipeline::issue(const Read& read) {
  const Read* r = &read;
  if (read.kind == Read::Kind::run) {
    if (run_bytes_in_flight_ > 0 && run_bytes_in_flight_ + read.length > schedule_.run_scratch) return false;
    for (const ReadSegment& s : read.segments) {
      (void)host_span(s.tensor);
      progress_.start(s.tensor);
    }
    auto scratch = std::make_shared<std::vector<std::byte>>(read.length);
    run_bytes_in_flight_ += read.length;
    ++reads_in_flight_;
    ++state_.stats.reads;
    engine_->read(read.file, read.offset, *scratch, [this, r, scratch](std::exception_ptr error, std::size_t got) {
      on_run_read(*r, *scratch, error, got);
    });
    return true;
  }
  if (read.kind == Read::Kind::direct) {
    const ReadSegment& s = read.segments.front();
    const std::span<std::byte> host = host_span(s.tensor);
    progress_.start(s.tensor);
    if (read.decoded) {  // decoded straight into the host-visible buffer: nothing to wait for
      decode_into(s.tensor, host);
      complete(s.tensor, host.size());
      return true;
    }
    ++reads_in_flight_;
    ++state_.stats.reads;
    engine_->read(read.file, read.offset, host.subspan(s.dst_offset, read.length),
                  [this, r](std::exception_ptr error, std::size_t got) { on_direct_read(*r, error, got); });
    return true;
  }
  const auto slot = ring_.acquire();
  if (!slot) return false;
  for (const ReadSegment& s : read.segments) progress_.start(s.tensor);
  if (read.decoded) {  // decoded bytes enter the slot by copy, then go the way of a read
    try {
      const auto bytes = decoded(read.segments.front().tensor);
      std::memcpy(ring_.bytes(*slot).data(), bytes.data() + read.offset, read.length);
    } catch (...) {
      ring_.release(*slot);
      throw;
    }
    ++reads_in_flight_;
    boost::asio::post(context_, [this, r, slot = *slot] { on_staged_read(*r, slot, 0, nullptr, r->length); });
    return true;
  }
  // The extent the plan decided (whole blocks with O_DIRECT), from the O_DIRECT twin when so.
  if (read.extent_offset > read.offset || read.offset - read.extent_offset + read.length > read.extent_length ||
      read.extent_length > ring_.bytes(*slot).size()) {
    ring_.release(*slot);
    fail(ErrorCode::usage, file_path(read.file).string(), ": the schedule's read at ", read.offset, " (", read.length,
         " bytes) has an extent [", read.extent_offset, ", +", read.extent_length,
         ") that does not hold it in a slot of ", ring_.bytes(*slot).size(), " bytes");
  }
  const std::size_t source = read.file + (direct_io_ ? files_.size() : 0);
  ++reads_in_flight_;
  ++state_.stats.reads;
  const std::uint64_t head = read.offset - read.extent_offset;
  engine_->read(source, read.extent_offset, ring_.bytes(*slot).first(read.extent_length),
                [this, r, slot = *slot, head](std::exception_ptr error, std::size_t got) {
                  on_staged_read(*r, slot, head, error, got);
                });
  return true;
}

void DataPipeline::on_direct_read(const Read& read, std::exception_ptr error, std::size_t got) {
  --reads_in_flight_;
  state_.stats.bytes_read += got;
  state_.io.buffered_bytes += got;
  const std::size_t index = read.segments.front().tensor;
  try {
    if (error) std::rethrow_exception(error);
    if (got < read.length)
      fail(ErrorCode::bad_input, file_path(read.file).string(), ": tensor '", tensor(index).name, "': needs bytes [",
           read.offset, ", ", read.offset + read.length, ") but the file ends at ", read.offset + got,
           " (truncated during the load?)");
    if (!failure_) {
      progress_.event(LoadEvent::Kind::bytes_read, index, got);
      complete(index, read.length);
    }
  } catch (...) {
    record_failure(std::current_exception());
  }
  pump();
}

void DataPipeline::on_run_read(const Read& read, std::span<const std::byte> scratch, std::exception_ptr error,
                               std::size_t got) {
  --reads_in_flight_;
  run_bytes_in_flight_ -= read.length;
  state_.stats.bytes_read += got;
  state_.io.buffered_bytes += got;
  try {
    if (error) std::rethrow_exception(error);
    for (const ReadSegment& s : read.segments) {
      if (s.read_offset + s.length > got)
        fail(ErrorCode::bad_input, file_path(read.file).string(), ": tensor '", tensor(s.tensor).name,
             "': needs bytes [", read.offset + s.read_offset, ", ", read.offset + s.read_offset + s.length,
             ") but the file ends at ", read.offset + got, " (truncated during the load?)");
      if (failure_) break;
      std::memcpy(host_span(s.tensor).data() + s.dst_offset, scratch.data() + s.read_offset, s.length);
      progress_.event(LoadEvent::Kind::bytes_read, s.tensor, s.length);
      complete(s.tensor, s.length);
    }
  } catch (...) {
    record_failure(std::current_exception());
  }
  pump();
}

void DataPipeline::on_staged_read(const Read& read, std::size_t slot, std::uint64_t head, std::exception_ptr error,
                                  std::size_t got) {
  --reads_in_flight_;
  if (!read.decoded) {
    state_.stats.bytes_read += got;
    (direct_io_ ? state_.io.direct_io_bytes : state_.io.buffered_bytes) += got;
  }
  try {
    if (error) std::rethrow_exception(error);
    if (got < head + read.length) {
      const std::uint64_t have = got > head ? got - head : 0;
      const ReadSegment* short_segment = &read.segments.front();
      for (const ReadSegment& s : read.segments)
        if (s.read_offset + s.length > have) {
          short_segment = &s;
          break;
        }
      fail(ErrorCode::bad_input, file_path(read.file).string(), ": tensor '", tensor(short_segment->tensor).name,
           "': needs bytes up to ", read.offset + short_segment->read_offset + short_segment->length,
           " but the file ends at ", read.offset + have, " (truncated during the load?)");
    }
    if (!failure_) {
      progress_.in_flight += read.length;
      progress_.event(LoadEvent::Kind::bytes_read, read.segments.front().tensor, read.length);
      StagingBuffer& staging = ring_.buffer(slot);
      for (const ReadSegment& s : read.segments) {
        ++slot_uploads_[slot];
        ++uploads_in_flight_;
        // Never throws: a failure of any kind comes back through the callback, once.
        device_.upload(staging, head + s.read_offset, buffer(s.tensor), s.dst_offset, s.length,
                       [this, slot, seg = &s](std::exception_ptr err) {
                         boost::asio::post(context_, [this, slot, seg, err] { on_upload_done(slot, *seg, err); });
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

void DataPipeline::on_upload_done(std::size_t slot, const ReadSegment& segment, std::exception_ptr error) {
  --uploads_in_flight_;
  progress_.in_flight -= segment.length;
  if (--slot_uploads_[slot] == 0) ring_.release(slot);
  try {
    if (error) std::rethrow_exception(error);
    if (!failure_) {
      progress_.event(LoadEvent::Kind::bytes_uploaded, segment.tensor, segment.length);
      complete(segment.tensor, segment.length);
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
      buffer(e).end_host_write();
    } catch (...) {
    }
  }
}

// Before the first read, what the plan chose is set up; what the kernel or the device refuses is
// re-planned by the planner with the reason, so the plan kept in Weights says what ran.
void DataPipeline::run() {
  plan::LoadRefusals refused;
  if (state_.plan.direct_io) refused.direct_io = open_direct_files();
  if (!idle()) refused.engine = make_engine();
  if (!refused.direct_io.empty() || !refused.engine.empty()) {
    plan::replan_refused(state_.manifest, state_.plan, refused);
    next_read_.assign(schedule_.queues.size(), 0);  // the same queues, their reads made again
  }
  if (engine_) {
    pump();
    wait_until_idle();
  }
  decoded_bytes_ = {};
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
