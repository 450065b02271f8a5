// A wrapper over a real device for tests that provoke what no real driver does on demand: it
// counts live buffers and staging buffers (and staging bytes, with their peak), and fails the Nth
// allocation or upload, the staging allocation, or declines every import (as RADV declines
// file-backed pages), on request.
#pragma once

#include <atomic>
#include <memory>

#include "lwload/backend_impl.hpp"
#include "lwload/error.hpp"

namespace lwload::test {

struct Counters {
  std::atomic<int> live_buffers{0};
  std::atomic<int> live_staging{0};
  // Bytes of staging memory asked for and not yet freed, and the most there ever were at once.
  std::atomic<std::uint64_t> live_staging_bytes{0};
  std::atomic<std::uint64_t> peak_staging_bytes{0};
  int allocations = 0;
  int uploads = 0;
};

class CountedBuffer final : public DeviceBufferImpl {
 public:
  CountedBuffer(std::unique_ptr<DeviceBuffer> inner, Counters& counters)
      : inner_(std::move(inner)), counters_(counters) {
    ++counters_.live_buffers;
  }
  ~CountedBuffer() override { --counters_.live_buffers; }
  std::uint64_t size() const noexcept override { return inner_->size(); }
  NativeHandle native() const noexcept override { return inner_->native(); }
  std::string_view mechanism() const noexcept override { return inner_->mechanism(); }
  std::span<std::byte> begin_host_write() override { return inner_->begin_host_write(); }
  void end_host_write() override { inner_->end_host_write(); }
  DeviceBuffer& inner() { return *inner_; }

 protected:
  void do_read_back(std::uint64_t offset, std::span<std::byte> dst) override { inner_->read_back(offset, dst); }

 private:
  std::unique_ptr<DeviceBuffer> inner_;
  Counters& counters_;
};

class CountedStaging final : public StagingBuffer {
 public:
  // `shift`: the bytes handed out start that far into the inner buffer (a misaligned staging buffer).
  CountedStaging(std::unique_ptr<StagingBuffer> inner, std::uint64_t bytes, Counters& counters, std::uint64_t shift = 0)
      : inner_(std::move(inner)), bytes_(bytes), shift_(shift), counters_(counters) {
    ++counters_.live_staging;
    const std::uint64_t live = counters_.live_staging_bytes += bytes_;
    std::uint64_t peak = counters_.peak_staging_bytes.load();
    while (live > peak && !counters_.peak_staging_bytes.compare_exchange_weak(peak, live)) {
    }
  }
  ~CountedStaging() override {
    --counters_.live_staging;
    counters_.live_staging_bytes -= bytes_;
  }
  std::span<std::byte> bytes() noexcept override { return inner_->bytes().subspan(shift_, bytes_); }
  StagingBuffer& inner() { return *inner_; }
  std::uint64_t shift() const noexcept { return shift_; }

 private:
  std::unique_ptr<StagingBuffer> inner_;
  std::uint64_t bytes_;
  std::uint64_t shift_;
  Counters& counters_;
};

// Wraps a real device; fails the Nth allocation or upload, or the staging allocation, on request.
class FaultyDevice final : public DeviceImpl {
 public:
  explicit FaultyDevice(std::unique_ptr<Device> inner) : inner_(std::move(inner)), info_(inner_->info()) {}
  const DeviceInfo& info() const noexcept override { return info_; }
  DeviceInfo& mutable_info() { return info_; }

  std::unique_ptr<DeviceBuffer> do_allocate(std::uint64_t bytes, MemoryPlace place) override {
    if (++counters.allocations == fail_allocation)
      fail(ErrorCode::out_of_memory, "test device: allocation ", counters.allocations, " of ", bytes, " bytes refused");
    return std::make_unique<CountedBuffer>(inner_->allocate(bytes, place), counters);
  }
  ImportResult do_import_host(std::span<const std::byte> range) override {
    if (decline_import) return ImportResult::decline("test device declines every import");
    auto result = inner_->import_host(range);
    if (result.buffer) result.buffer = std::make_unique<CountedBuffer>(std::move(result.buffer), counters);
    return result;
  }
  std::unique_ptr<StagingBuffer> do_allocate_staging(std::uint64_t bytes) override {
    if (fail_staging) fail(ErrorCode::out_of_memory, "test device: no staging memory");
    const std::uint64_t shift = misalign_staging ? 64 : 0;
    return std::make_unique<CountedStaging>(inner_->allocate_staging(bytes + shift), bytes, counters, shift);
  }
  void finish() override { inner_->finish(); }

  Counters counters;
  int fail_allocation = -1;
  int fail_upload = -1;
  bool fail_staging = false;
  bool decline_import = false;
  bool misalign_staging = false;  // staging buffers 64 bytes past a page boundary (no O_DIRECT into them)

 protected:
  void do_upload(StagingBuffer& staging, std::uint64_t src_offset, DeviceBuffer& dst, std::uint64_t dst_offset,
                 std::uint64_t bytes, TransferDone done) override {
    if (++counters.uploads == fail_upload) {
      done(std::make_exception_ptr(Error(ErrorCode::device, "test device: transfer failed")));
      return;
    }
    auto& counted = static_cast<CountedStaging&>(staging);
    inner_->upload(counted.inner(), counted.shift() + src_offset, static_cast<CountedBuffer&>(dst).inner(), dst_offset,
                   bytes, std::move(done));
  }

 private:
  std::unique_ptr<Device> inner_;
  DeviceInfo info_;
};

}  // namespace lwload::test
