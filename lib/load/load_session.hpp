// One run of the loader: opens the files, makes every import and allocation, then drives the data
// phase (direct reads and the staging ring) on a Boost.Asio io_context that runs on the calling
// thread, so all bookkeeping and every user callback happen on that thread without locks.
// Whatever goes wrong, the session drains what is in flight and its members release the rest.
#pragma once

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <deque>
#include <exception>
#include <memory>
#include <vector>

#include "io/async_reader.hpp"
#include "io/staging_ring.hpp"
#include "load/region_imports.hpp"
#include "load/weights_state.hpp"
#include "load/work_list.hpp"
#include "lwload/loader.hpp"

namespace lwload::loading {

class LoadSession {
 public:
  LoadSession(const Manifest& manifest, Device& device, const Plan& plan, const LoadOptions& options);
  ~LoadSession();
  LoadSession(const LoadSession&) = delete;
  LoadSession& operator=(const LoadSession&) = delete;

  Weights run();

 private:
  struct EntryState {
    std::uint64_t remaining = 0;     // bytes not yet on the device
    std::span<std::byte> host;       // direct: begin_host_write() span while open
    bool started = false;
    bool ready = false;
  };

  const TensorInfo& tensor(std::size_t entry) const;
  const std::filesystem::path& file_path(std::uint32_t file) const;
  void phase(std::string_view name);
  void event(LoadEvent::Kind kind, std::size_t entry, std::uint64_t bytes);
  void start_entry(std::size_t entry);
  void complete_bytes(std::size_t entry, std::uint64_t bytes);
  void deliver_ready();
  void record_failure(std::exception_ptr error);
  void check_cancel();

  void open_files();
  void check_extents();
  void import_regions();
  void allocate_tensors();
  void make_handles();
  void open_direct_files();
  void choose_engine();
  void populate_zero_copy();
  void load_encoded();
  void run_pipeline();
  void pump();
  bool issue(ReadItem& item);
  void on_direct_read(const ReadItem& item, std::exception_ptr error, std::size_t got);
  void on_staged_read(const ReadItem& item, std::size_t slot, std::uint64_t head, std::exception_ptr error,
                      std::size_t got);
  void on_upload_done(std::size_t slot, const Segment& segment, std::exception_ptr error);
  bool idle() const;
  void wait_until_idle();
  void close_host_writes() noexcept;

  Device& device_;
  const LoadOptions& options_;
  std::chrono::steady_clock::time_point start_;
  std::unique_ptr<Weights::State> state_;
  std::vector<EntryState> entries_;
  std::vector<std::uint64_t> file_sizes_;
  std::vector<std::unique_ptr<RandomAccessFile>> files_;         // per manifest file; null if unused
  std::vector<std::unique_ptr<RandomAccessFile>> direct_files_;  // O_DIRECT twins, when used
  std::vector<std::size_t> tensor_buffer_;                       // entry → index into state_->buffers
  std::vector<ImportedRegion> regions_;                          // per Plan::regions entry

  boost::asio::io_context context_;
  io::StagingRing ring_;
  std::unique_ptr<io::AsyncReader> reader_;  // after context_ and ring_: destroyed (and drained) first
  std::vector<std::deque<ReadItem>> queues_;
  std::size_t next_queue_ = 0;
  std::vector<std::size_t> slot_uploads_;   // uploads in flight per slot
  std::size_t reads_in_flight_ = 0;
  std::size_t uploads_in_flight_ = 0;
  std::uint64_t staged_in_flight_ = 0;      // bytes read into slots, not yet uploaded
  std::uint64_t done_bytes_ = 0;
  std::size_t next_ready_ = 0;
  bool direct_io_ = false;
  std::exception_ptr failure_;
};

}  // namespace lwload::loading
