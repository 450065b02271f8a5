#include "load/load_session.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>

#include <algorithm>
#include <cstring>

#include "formats/encoded.hpp"
#include "core/align.hpp"
#include "io/io_engine.hpp"
#include "load/residency.hpp"
#include "lwload/error.hpp"

namespace lwload::loading {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::uint64_t kDirectChunk = 16ull << 20;   // one pread per 16 MiB into a direct buffer
constexpr std::uint64_t kDirectIoAlignment = 4096;    // O_DIRECT offsets, sizes and buffers
constexpr std::uint64_t kCoalesceGap = 64 * 1024;     // staged reads read through padding this small
constexpr std::uint64_t kMaxDecodeExpansion = 16;     // decoded bytes per encoded byte, at most

bool loads_data(Placement p) { return p != Placement::skipped; }

}  // namespace

LoadSession::LoadSession(const Manifest& manifest, Device& device, const Plan& plan, const LoadOptions& options)
    : device_(device), options_(options), start_(Clock::now()), state_(std::make_unique<Weights::State>()) {
  state_->manifest = manifest;
  state_->plan = plan;
  state_->device = device.info();
  state_->file_system = options.file_system ? options.file_system : posix_file_system();
  entries_.resize(plan.tensors.size());
  tensor_buffer_.assign(plan.tensors.size(), static_cast<std::size_t>(-1));
  for (std::size_t e = 0; e < plan.tensors.size(); ++e) entries_[e].remaining = tensor(e).bytes;
}

LoadSession::~LoadSession() {
  // Normal and failed runs drain before returning; this covers an exception thrown while draining.
  try {
    close_host_writes();
    if (reads_in_flight_ || uploads_in_flight_) device_.finish();
  } catch (...) {
  }
}

const TensorInfo& LoadSession::tensor(std::size_t entry) const {
  return state_->manifest.tensors[state_->plan.tensors[entry].tensor];
}

const std::filesystem::path& LoadSession::file_path(std::uint32_t file) const { return state_->manifest.files[file]; }

void LoadSession::phase(std::string_view name) {
  if (!options_.on_event) return;
  LoadEvent e;
  e.kind = LoadEvent::Kind::phase;
  e.time = Clock::now();
  e.phase = name;
  e.in_flight = staged_in_flight_;
  options_.on_event(e);
}

void LoadSession::event(LoadEvent::Kind kind, std::size_t entry, std::uint64_t bytes) {
  if (!options_.on_event) return;
  LoadEvent e;
  e.kind = kind;
  e.time = Clock::now();
  e.tensor = state_->plan.tensors[entry].tensor;
  e.bytes = bytes;
  e.in_flight = staged_in_flight_;
  options_.on_event(e);
}

void LoadSession::record_failure(std::exception_ptr error) {
  if (!failure_) failure_ = std::move(error);
}

void LoadSession::check_cancel() {
  if (options_.cancel && options_.cancel->cancelled())
    fail(ErrorCode::cancelled, "load cancelled after ", done_bytes_, " of ", state_->plan.model_bytes,
         " bytes; everything loaded so far was released");
}

void LoadSession::start_entry(std::size_t entry) {
  if (entries_[entry].started) return;
  entries_[entry].started = true;
  event(LoadEvent::Kind::tensor_start, entry, 0);
}

// Called on the context thread only. User callbacks may throw: that fails the load.
void LoadSession::complete_bytes(std::size_t entry, std::uint64_t bytes) {
  EntryState& state = entries_[entry];
  state.remaining -= bytes;
  done_bytes_ += bytes;
  if (options_.on_progress) options_.on_progress(done_bytes_, state_->plan.model_bytes);
  if (state.remaining != 0) return;
  if (!state.host.empty()) {
    state.host = {};
    state_->buffers[tensor_buffer_[entry]]->end_host_write();
  }
  state.ready = true;
  event(LoadEvent::Kind::tensor_end, entry, 0);
  deliver_ready();
}

// Ready callbacks go out in load order: a tensor that finished early waits for those before it.
void LoadSession::deliver_ready() {
  const auto& plan = state_->plan;
  while (next_ready_ < plan.tensors.size()) {
    if (plan.tensors[next_ready_].placement == Placement::skipped) {
      ++next_ready_;
      continue;
    }
    if (!entries_[next_ready_].ready) break;
    const std::size_t entry = next_ready_++;
    if (options_.on_tensor_ready) options_.on_tensor_ready(state_->handles[entry]);
  }
}

// ---- setup -------------------------------------------------------------------------------

void LoadSession::open_files() {
  const auto& manifest = state_->manifest;
  files_.resize(manifest.files.size());
  file_sizes_.assign(manifest.files.size(), 0);
  state_->identities.assign(manifest.files.size(), FileIdentity{});
  for (std::size_t e = 0; e < entries_.size(); ++e) {
    if (!loads_data(state_->plan.tensors[e].placement)) continue;
    for (const Piece& piece : tensor(e).pieces) {
      if (piece.file >= manifest.files.size())
        fail(ErrorCode::bad_input, "tensor '", tensor(e).name, "': piece names file ", piece.file, " of ",
             manifest.files.size());
      if (files_[piece.file]) continue;
      files_[piece.file] = state_->file_system->open(manifest.files[piece.file]);
      state_->identities[piece.file] = files_[piece.file]->identity();
      file_sizes_[piece.file] = state_->identities[piece.file].size;
    }
  }
}

// The files may have changed since their headers were read: every byte the plan needs must still
// be there (a later truncation shows up as a short read, named the same way).
void LoadSession::check_extents() {
  for (std::size_t e = 0; e < entries_.size(); ++e) {
    if (!loads_data(state_->plan.tensors[e].placement)) continue;
    const TensorInfo& t = tensor(e);
    for (const Piece& piece : t.pieces) {
      const std::uint64_t size = file_sizes_[piece.file];
      if (piece.offset > size || piece.length > size - piece.offset)
        fail(ErrorCode::bad_input, file_path(piece.file).string(), ": tensor '", t.name, "' needs bytes [",
             piece.offset, ", ", piece.offset + piece.length, ") but the file now has ", size,
             " bytes (truncated or replaced since its headers were read)");
    }
  }
}

void LoadSession::import_regions() {
  if (state_->plan.regions.empty()) return;
  phase("import");
  regions_ = loading::import_regions(*state_, device_, files_);
  const Plan& plan = state_->plan;
  for (std::size_t e = 0; e < plan.tensors.size(); ++e)
    if (plan.tensors[e].placement == Placement::zero_copy) tensor_buffer_[e] = regions_[plan.tensors[e].region].buffer;
}

void LoadSession::allocate_tensors() {
  const Plan& plan = state_->plan;
  phase("allocate");
  for (std::size_t e = 0; e < plan.tensors.size(); ++e) {
    const Placement p = plan.tensors[e].placement;
    if (p != Placement::direct && p != Placement::staged) continue;
    auto buffer = device_.allocate(tensor(e).bytes, p == Placement::direct ? MemoryPlace::host_visible
                                                                           : MemoryPlace::device_local);
    if (!buffer) fail(ErrorCode::device, "device ", device_.info().id(), " returned no buffer for tensor '",
                      tensor(e).name, "'");
    tensor_buffer_[e] = state_->buffers.size();
    state_->buffers.push_back(std::move(buffer));
  }
  if (plan.count(Placement::staged) > 0) {
    ring_ = io::StagingRing(device_, plan.staging_slots, plan.slot_bytes);
    slot_uploads_.assign(ring_.slots(), 0);
  }
}

void LoadSession::make_handles() {
  const Plan& plan = state_->plan;
  state_->handles.resize(plan.tensors.size());
  for (std::size_t e = 0; e < plan.tensors.size(); ++e) {
    const TensorPlan& tp = plan.tensors[e];
    TensorHandle& h = state_->handles[e];
    h.index = tp.tensor;
    h.info = &state_->manifest.tensors[tp.tensor];
    h.placement = tp.placement;
    h.bytes = h.info->bytes;
    if (tensor_buffer_[e] != static_cast<std::size_t>(-1)) {
      h.buffer = state_->buffers[tensor_buffer_[e]].get();
      h.offset = tp.placement == Placement::zero_copy ? tp.region_offset : 0;
      // A tensor inside a region gets its own view where the backend can make one there.
      if (h.offset != 0) {
        if (auto view = h.buffer->view(h.offset, h.bytes)) {
          h.buffer = view.get();
          h.offset = 0;
          h.view = true;
          state_->views.push_back(std::move(view));
        }
      }
      h.native = h.buffer->native();
      h.mechanism = h.buffer->mechanism();
    }
    state_->by_name.emplace(h.info->name, e);
  }
}

// O_DIRECT (staged reads only: they land in page-aligned slots with slack for the unaligned head
// and tail of each read). Opened through the seam; refused → buffered reads, with the reason.
void LoadSession::open_direct_files() {
  std::string why;
  if (ring_.slots() == 0) why = "nothing is staged";
  else if (ring_.slot_bytes() < 3 * kDirectIoAlignment) why = "staging slots are too small";
  else if (!ring_.aligned_to(kDirectIoAlignment)) why = "the device's staging buffers are not page-aligned";
  if (why.empty()) {
    try {
      direct_files_.resize(files_.size());
      for (std::size_t f = 0; f < files_.size(); ++f)
        if (files_[f])
          direct_files_[f] = state_->file_system->open(file_path(static_cast<std::uint32_t>(f)), FileOpenFlags{true});
    } catch (const std::exception& e) {
      why = str("O_DIRECT open failed: ", e.what());
      direct_files_.clear();
    }
  }
  if (why.empty())
    direct_io_ = true;
  else
    state_->io.direct_io_note = str("O_DIRECT not used: ", why);
}

void LoadSession::choose_engine() {
  std::vector<io::ReadSource> sources(files_.size());
  bool all_descriptors = true;
  for (std::size_t f = 0; f < files_.size(); ++f) {
    if (!files_[f]) continue;
    all_descriptors = all_descriptors && files_[f]->native_handle() >= 0;
    sources[f].file = files_[f].get();
  }
  if (direct_io_)
    for (std::size_t f = 0; f < files_.size(); ++f) sources.push_back(io::ReadSource{direct_files_[f].get(), true});

  const unsigned slots = state_->plan.staging_slots ? state_->plan.staging_slots : 4;
  const unsigned depth = std::clamp(slots, 2u, 8u);
  auto note = [&](const std::string& why) { state_->io.engine_note = str("io_uring not used: ", why); };
  // auto reads with the pread pool: io_uring completes buffered reads that hit the page cache
  // inline on the one submitting thread, so several pread threads beat it warm (2 GiB, null
  // staged: 141 % vs 82 % of single-threaded pread) and matched or beat it with O_DIRECT cold.
  if (options_.io == IoEngine::auto_) {
    state_->io.engine_note = "auto: the pread pool (faster than io_uring here; --io io_uring to choose it)";
  } else if (options_.io == IoEngine::io_uring) {
    const auto& probe = io::probe_io_uring();
    if (!probe.usable) {
      note(probe.note);
    } else if (!all_descriptors) {
      note("the files have no descriptors (in-memory file system)");
    } else {
      try {
        reader_ = io::make_uring_reader(context_, sources, depth);
      } catch (const std::exception& e) {
        note(e.what());
      }
    }
  }
  if (!reader_) {
    const unsigned threads = options_.io_threads ? options_.io_threads : std::clamp(slots, 2u, 4u);
    reader_ = io::make_pread_reader(context_, sources, threads);
  }
  state_->io.engine = reader_->engine();
}

// ---- data --------------------------------------------------------------------------------

// ONNX typed fields: read the encoded bytes (bounded by the file, checked above), decode on the
// host, write into the direct buffer or push through one staging slot.
void LoadSession::load_encoded() {
  for (std::size_t e = 0; e < entries_.size(); ++e) {
    const Placement p = state_->plan.tensors[e].placement;
    const TensorInfo& t = tensor(e);
    if (t.encoding == Encoding::raw || (p != Placement::direct && p != Placement::staged)) continue;
    check_cancel();
    start_entry(e);
    std::uint64_t encoded_size = 0;
    for (const Piece& piece : t.pieces) encoded_size += piece.length;
    if (t.bytes / kMaxDecodeExpansion > encoded_size + 1)
      fail(ErrorCode::bad_input, file_path(t.pieces.empty() ? 0 : t.pieces[0].file).string(), ": tensor '", t.name,
           "': ", t.bytes, " bytes cannot come from ", encoded_size, " encoded bytes");
    std::vector<std::byte> encoded(encoded_size);
    std::uint64_t at = 0;
    for (const Piece& piece : t.pieces) {
      files_[piece.file]->read_exact(piece.offset, std::span(encoded).subspan(at, piece.length),
                                     str("tensor '", t.name, "' data"));
      at += piece.length;
    }
    state_->stats.bytes_read += encoded_size;
    const auto& path = file_path(t.pieces.empty() ? 0 : t.pieces[0].file);
    DeviceBuffer& buffer = *state_->buffers[tensor_buffer_[e]];
    if (p == Placement::direct) {
      const auto host = buffer.begin_host_write();
      if (host.size() < t.bytes) {
        buffer.end_host_write();
        fail(ErrorCode::device, "device ", device_.info().id(), ": host-visible buffer for tensor '", t.name,
             "' is not writable by the host");
      }
      try {
        formats::decode_tensor(t, encoded, host.first(t.bytes), path);
      } catch (...) {
        buffer.end_host_write();
        throw;
      }
      buffer.end_host_write();
      complete_bytes(e, t.bytes);
      continue;
    }
    std::vector<std::byte> decoded(t.bytes);
    formats::decode_tensor(t, encoded, decoded, path);
    const std::size_t slot = *ring_.acquire();  // the ring is idle before the pipeline starts
    for (std::uint64_t off = 0; off < t.bytes; off += ring_.slot_bytes()) {
      const std::uint64_t n = std::min<std::uint64_t>(ring_.slot_bytes(), t.bytes - off);
      std::memcpy(ring_.bytes(slot).data(), decoded.data() + off, n);
      bool done = false;
      std::exception_ptr error;
      context_.restart();
      auto guard = boost::asio::make_work_guard(context_);
      ++uploads_in_flight_;
      try {
        device_.upload(ring_.buffer(slot), 0, buffer, off, n, [this, &done, &error](std::exception_ptr err) {
          boost::asio::post(context_, [&done, &error, err] {
            error = err;
            done = true;
          });
        });
      } catch (...) {
        --uploads_in_flight_;
        ring_.release(slot);
        throw;
      }
      while (!done) context_.run_one();
      --uploads_in_flight_;
      ++state_->stats.uploads;
      state_->stats.bytes_uploaded += n;
      if (error) {
        ring_.release(slot);
        std::rethrow_exception(error);
      }
      complete_bytes(e, n);
    }
    ring_.release(slot);
  }
}

bool LoadSession::idle() const {
  if (reads_in_flight_ || uploads_in_flight_) return false;
  if (failure_) return true;
  return std::all_of(queues_.begin(), queues_.end(), [](const auto& q) { return q.empty(); });
}

// Starts reads while there is room: in-flight reads below the reader's depth, and a free slot for
// staged reads. Files take turns, so a sharded model's files are read concurrently.
void LoadSession::pump() {
  while (!failure_ && reads_in_flight_ < reader_->concurrency()) {
    try {
      check_cancel();
    } catch (...) {
      record_failure(std::current_exception());
      return;
    }
    bool issued = false;
    for (std::size_t tried = 0; tried < queues_.size() && !issued; ++tried) {
      const std::size_t q = next_queue_;
      next_queue_ = (next_queue_ + 1) % queues_.size();
      if (queues_[q].empty()) continue;
      if (issue(queues_[q].front())) {
        queues_[q].pop_front();
        issued = true;
      }
    }
    if (!issued) return;
  }
}

bool LoadSession::issue(ReadItem& item) {
  if (!item.staged) {
    EntryState& entry = entries_[item.entry];
    if (entry.host.empty()) {
      DeviceBuffer& buffer = *state_->buffers[tensor_buffer_[item.entry]];
      const auto host = buffer.begin_host_write();
      if (host.size() < tensor(item.entry).bytes) {
        buffer.end_host_write();
        record_failure(std::make_exception_ptr(Error(ErrorCode::device,
            str("device ", device_.info().id(), ": host-visible buffer for tensor '", tensor(item.entry).name,
                "' is not writable by the host (", host.size(), " of ", tensor(item.entry).bytes, " bytes)"))));
        return false;
      }
      entry.host = host.first(tensor(item.entry).bytes);
    }
    start_entry(item.entry);
    ++reads_in_flight_;
    ++state_->stats.reads;
    reader_->read(item.file, item.offset, entry.host.subspan(item.dst_offset, item.length),
                  [this, item](std::exception_ptr error, std::size_t got) { on_direct_read(item, error, got); });
    return true;
  }
  const auto slot = ring_.acquire();
  if (!slot) return false;
  std::uint64_t begin = item.offset, end = item.offset + item.length;
  std::size_t source = item.file;
  if (direct_io_) {
    begin = align_down(begin, kDirectIoAlignment);
    end = align_up(end, kDirectIoAlignment);
    source += files_.size();  // the O_DIRECT twin
  }
  for (const Segment& s : item.segments) start_entry(s.entry);
  ++reads_in_flight_;
  ++state_->stats.reads;
  const std::uint64_t head = item.offset - begin;
  reader_->read(source, begin, ring_.bytes(*slot).first(end - begin),
                [this, item, slot = *slot, head](std::exception_ptr error, std::size_t got) {
                  on_staged_read(item, slot, head, error, got);
                });
  return true;
}

void LoadSession::on_direct_read(const ReadItem& item, std::exception_ptr error, std::size_t got) {
  --reads_in_flight_;
  state_->stats.bytes_read += got;
  try {
    if (error) std::rethrow_exception(error);
    if (got < item.length)
      fail(ErrorCode::bad_input, file_path(item.file).string(), ": tensor '", tensor(item.entry).name,
           "': needs bytes [", item.offset, ", ", item.offset + item.length, ") but the file ends at ",
           item.offset + got, " (truncated during the load?)");
    if (!failure_) {
      event(LoadEvent::Kind::bytes_read, item.entry, got);
      complete_bytes(item.entry, item.length);
    }
  } catch (...) {
    record_failure(std::current_exception());
  }
  pump();
}

void LoadSession::on_staged_read(const ReadItem& item, std::size_t slot, std::uint64_t head,
                                 std::exception_ptr error, std::size_t got) {
  --reads_in_flight_;
  state_->stats.bytes_read += got;
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
      staged_in_flight_ += item.length;
      event(LoadEvent::Kind::bytes_read, item.segments.front().entry, item.length);
      StagingBuffer& staging = ring_.buffer(slot);
      for (const Segment& s : item.segments) {
        DeviceBuffer& dst = *state_->buffers[tensor_buffer_[s.entry]];
        ++slot_uploads_[slot];
        ++uploads_in_flight_;
        try {
          device_.upload(staging, head + s.read_offset, dst, s.dst_offset, s.length,
                         [this, slot, s](std::exception_ptr err) {
                           boost::asio::post(context_, [this, slot, s, err] { on_upload_done(slot, s, err); });
                         });
        } catch (...) {
          --slot_uploads_[slot];
          --uploads_in_flight_;
          throw;
        }
        ++state_->stats.uploads;
        state_->stats.bytes_uploaded += s.length;
      }
    }
  } catch (...) {
    record_failure(std::current_exception());
  }
  if (slot_uploads_[slot] == 0) ring_.release(slot);
  pump();
}

void LoadSession::on_upload_done(std::size_t slot, const Segment& segment, std::exception_ptr error) {
  --uploads_in_flight_;
  staged_in_flight_ -= segment.length;
  if (--slot_uploads_[slot] == 0) ring_.release(slot);
  try {
    if (error) std::rethrow_exception(error);
    if (!failure_) {
      event(LoadEvent::Kind::bytes_uploaded, segment.entry, segment.length);
      complete_bytes(segment.entry, segment.length);
    }
  } catch (...) {
    record_failure(std::current_exception());
  }
  pump();
}

void LoadSession::wait_until_idle() {
  context_.restart();  // a context that ran out of work before is stopped until restarted
  auto guard = boost::asio::make_work_guard(context_);
  while (!idle()) context_.run_one();
}

void LoadSession::close_host_writes() noexcept {
  for (std::size_t e = 0; e < entries_.size(); ++e) {
    if (entries_[e].host.empty()) continue;
    entries_[e].host = {};
    try {
      state_->buffers[tensor_buffer_[e]]->end_host_write();
    } catch (...) {
    }
  }
}

// Zero-copy tensors are on the device once imported; "ready" waits until their pages are
// resident too, unless the caller asked for lazy.
void LoadSession::populate_zero_copy() {
  const Plan& plan = state_->plan;
  if (plan.regions.empty()) return;
  for (const TensorPlan& tp : plan.tensors)
    if (tp.placement == Placement::zero_copy) state_->stats.zero_copy_bytes += state_->manifest.tensors[tp.tensor].bytes;
  if (options_.lazy) {
    for (std::size_t e = 0; e < entries_.size(); ++e) {
      if (plan.tensors[e].placement != Placement::zero_copy) continue;
      start_entry(e);
      complete_bytes(e, tensor(e).bytes);
    }
    return;
  }
  phase("populate");
  const auto begin = Clock::now();
  make_resident(plan, state_->manifest, regions_,
                {.started = [this](std::size_t e) { start_entry(e); },
                 .done = [this](std::size_t e, std::uint64_t bytes) { complete_bytes(e, bytes); },
                 .check_cancel = [this] { check_cancel(); }});
  state_->stats.populate_seconds = std::chrono::duration<double>(Clock::now() - begin).count();
}

void LoadSession::run_pipeline() {
  populate_zero_copy();
  phase("read");
  load_encoded();
  if (options_.direct_io) open_direct_files();
  WorkLimits limits;
  limits.direct_chunk = kDirectChunk;
  limits.staged_chunk = ring_.slot_bytes() - (direct_io_ ? 2 * kDirectIoAlignment : 0);
  limits.coalesce_gap = kCoalesceGap;
  if (ring_.slots() == 0) limits.staged_chunk = kDirectChunk;  // unused: nothing is staged
  queues_ = build_work(state_->manifest, state_->plan, limits);
  if (!idle()) {
    choose_engine();
    pump();
    wait_until_idle();
  }
  if (failure_) {
    close_host_writes();
    try {
      device_.finish();
    } catch (...) {
    }
    std::rethrow_exception(failure_);
  }
  phase("finish");
  device_.finish();
}

Weights LoadSession::run() {
  open_files();
  check_extents();
  import_regions();
  allocate_tensors();
  make_handles();
  state_->stats.allocate_seconds = std::chrono::duration<double>(Clock::now() - start_).count();
  run_pipeline();
  state_->io.direct_io = direct_io_;
  for (const ImportedRegion& region : regions_) state_->stats.resident_bytes += region.mapping->resident_bytes();
  deliver_ready();
  phase("done");
  state_->stats.seconds = std::chrono::duration<double>(Clock::now() - start_).count();
  return Weights(std::move(state_));
}

}  // namespace lwload::loading
