// The data phase for direct and staged tensors: the plan's schedule carried out on a Boost.Asio
// io_context driven by the calling thread. Reads go straight into host-visible buffers (direct;
// runs of small neighbours into scratch, then copied) or into free staging slots whose bytes are
// then uploaded (staged); decoded tensors take the same two ways. Reads and uploads overlap; a slot returns to the ring
// when its uploads complete (from any thread, posted back to the loop), so all bookkeeping and every user callback run
// on the calling thread. Whatever goes wrong, the pipeline drains what is in flight before the failure propagates.
#pragma once

#include "loading/layer.hpp"

#include <boost/asio/io_context.hpp>

#include <exception>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "io/read_engine.hpp"
#include "io/staging_ring.hpp"
#include "loading/progress.hpp"

namespace lwload::loading {

class DataPipeline {
 public:
  // Allocates the staging ring the plan asks for (so it is part of the allocation phase).
  DataPipeline(Weights::State& state, Device& device, Progress& progress);
  ~DataPipeline();
  DataPipeline(const DataPipeline&) = delete;
  DataPipeline& operator=(const DataPipeline&) = delete;

  // Moves every direct and staged tensor onto the device; returns once the device has them all.
  void run();

 private:
  const TensorInfo& tensor(std::size_t index) const;
  DeviceBuffer& buffer(std::size_t index) const;
  const std::filesystem::path& file_path(std::uint32_t file) const;
  std::string open_direct_files();
  std::string make_engine();
  void record_failure(std::exception_ptr error);
  void pump();
  bool issue(const Read& read);
  std::span<std::byte> host_span(std::size_t index);
  void decode_into(std::size_t index, std::span<std::byte> out);
  std::span<const std::byte> decoded(std::size_t index);
  void complete(std::size_t index, std::uint64_t bytes);
  void on_direct_read(const Read& read, std::exception_ptr error, std::size_t got);
  void on_run_read(const Read& read, std::span<const std::byte> scratch, std::exception_ptr error, std::size_t got);
  void on_staged_read(const Read& read, std::size_t slot, std::uint64_t head, std::exception_ptr error,
                      std::size_t got);
  void on_upload_done(std::size_t slot, const ReadSegment& segment, std::exception_ptr error);
  bool idle() const;
  void wait_until_idle();
  void close_host_writes() noexcept;

  Weights::State& state_;
  Device& device_;
  Progress& progress_;
  const Schedule& schedule_;  // the plan's: read in place, changed only by a re-plan before the first read
  const OpenFiles& files_;
  std::vector<std::unique_ptr<RandomAccessFile>> direct_files_;  // O_DIRECT twins, when used
  std::vector<std::span<std::byte>> host_;                       // per tensor: the begin_host_write() span while open

  std::size_t decoded_tensor_ = static_cast<std::size_t>(-1);  // the tensor decoded_bytes_ holds
  std::vector<std::byte> decoded_bytes_;

  boost::asio::io_context context_;
  io::StagingRing ring_;
  std::unique_ptr<io::ReadEngine> engine_;  // after context_ and ring_: destroyed (and drained) first
  std::vector<std::size_t> next_read_;      // per schedule queue: its first read not yet issued
  std::size_t next_queue_ = 0;
  std::vector<std::size_t> slot_uploads_;  // uploads in flight per slot
  std::size_t reads_in_flight_ = 0;
  std::uint64_t run_bytes_in_flight_ = 0;  // scratch of direct runs being read
  std::size_t uploads_in_flight_ = 0;
  bool direct_io_ = false;
  std::exception_ptr failure_;
};

}  // namespace lwload::loading
