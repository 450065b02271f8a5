// Bookkeeping of the device memory lwload has allocated on one opened device, checked against
// CL_DEVICE_GLOBAL_MEM_SIZE. OpenCL drivers commonly over-commit and fail only at first use (PoCL
// never refuses at all); counting here turns "the device is full" into a clean
// Error(out_of_memory) at allocation time, before any byte moves.
#pragma once

#include "backends/opencl/layer.hpp"

#include <atomic>
#include <cstdint>
#include <memory>
#include <utility>

namespace lwload::opencl {

class MemoryAccount {
 public:
  explicit MemoryAccount(std::uint64_t capacity) : capacity_(capacity) {}
  // Adds `bytes` unless that would pass the capacity (0 = unknown: never refuses).
  bool try_reserve(std::uint64_t bytes) noexcept {
    std::uint64_t used = used_.load(std::memory_order_relaxed);
    do {
      if (capacity_ != 0 && (bytes > capacity_ || used > capacity_ - bytes)) return false;
    } while (!used_.compare_exchange_weak(used, used + bytes, std::memory_order_relaxed));
    return true;
  }
  void release(std::uint64_t bytes) noexcept { used_.fetch_sub(bytes, std::memory_order_relaxed); }
  std::uint64_t used() const noexcept { return used_.load(std::memory_order_relaxed); }
  std::uint64_t capacity() const noexcept { return capacity_; }

 private:
  const std::uint64_t capacity_;
  std::atomic<std::uint64_t> used_{0};
};

// Bytes reserved in an account, returned when this is destroyed (owned by the buffer using them).
class Reservation {
 public:
  Reservation() = default;
  Reservation(std::shared_ptr<MemoryAccount> account, std::uint64_t bytes)
      : account_(std::move(account)), bytes_(bytes) {}
  Reservation(Reservation&& other) noexcept
      : account_(std::move(other.account_)), bytes_(std::exchange(other.bytes_, 0)) {}
  Reservation& operator=(Reservation&& other) noexcept {
    if (this != &other) {
      reset();
      account_ = std::move(other.account_);
      bytes_ = std::exchange(other.bytes_, 0);
    }
    return *this;
  }
  ~Reservation() { reset(); }

 private:
  void reset() noexcept {
    if (account_ && bytes_) account_->release(bytes_);
    account_.reset();
    bytes_ = 0;
  }
  std::shared_ptr<MemoryAccount> account_;
  std::uint64_t bytes_ = 0;
};

}  // namespace lwload::opencl
