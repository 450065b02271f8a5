// One CUDA device as lwload drives it: the driver, the device, its context (the primary context
// lwload retains, or one the application handed over and keeps), and the stream uploads go on.
// Driver calls from lwload's threads run with the context pushed (ContextScope).
#pragma once

#include "backends/cuda/layer.hpp"

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "backends/cuda/driver.hpp"
#include "lwload/backend.hpp"

namespace lwload::cuda {

class CudaBuffer;  // buffers.hpp

class Session : public std::enable_shared_from_this<Session> {
 public:
  // lwload's own: retains the device's primary context and creates a non-blocking stream.
  static std::shared_ptr<Session> open(const Driver& d, CUdevice device, std::string label);
  // The application's context and stream (nullptr stream: lwload creates one in that context).
  // lwload never releases what it did not create.
  static std::shared_ptr<Session> adopt(const Driver& d, CUcontext context, CUstream stream, std::string label);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const Driver& driver() const noexcept { return d_; }
  CUcontext context() const noexcept { return context_; }
  CUstream stream() const noexcept { return stream_; }
  const std::string& label() const noexcept { return label_; }  // "cuda:0"
  void check(CUresult result, std::string_view call, std::string_view what = {}) const {
    cuda::check(d_, result, label_, call, what);
  }

  // The memory this context hands out (buffers.cpp): device memory (device_local) or pinned
  // mapped host memory (host_visible).
  std::unique_ptr<CudaBuffer> allocate(std::uint64_t bytes, MemoryPlace place);
  // Registers file pages; `range` starts on a page. A refusal (read-only pages the driver cannot
  // pin, ...) declines with the driver's result; other failures throw.
  ImportResult import_host(std::span<const std::byte> range);

 private:
  Session(const Driver& d, std::string label) : d_(d), label_(std::move(label)) {}

  const Driver& d_;
  std::string label_;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  CUstream stream_ = nullptr;
  bool owns_context_ = false;
  bool owns_stream_ = false;
};

// Makes the session's context current on this thread for its lifetime.
class ContextScope {
 public:
  explicit ContextScope(const Session& s);
  ~ContextScope();
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;

 private:
  const Session& s_;
};

}  // namespace lwload::cuda
