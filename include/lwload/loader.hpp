// The loader: executes a Plan on a Device. Every allocation (and import) is made first, then the
// data moves — zero_copy regions are imported from mapped file pages, direct tensors are read
// straight into host-visible device memory, staged tensors stream through a ring of staging slots
// with reads and uploads overlapped. The result, Weights, owns every mapping and allocation (RAII).
//
// Failure is all-or-nothing: on any error (bad or truncated file, read error, allocation failure,
// cancellation) everything made so far is released and load() throws lwload::Error; no partial
// Weights is ever handed out.
//
// Threading: load() blocks. All callbacks run on the thread that called load(), one at a time.
#pragma once

// Layer loading's public header: refused below loading in lwload's build (docs/ARCHITECTURE.md, "Layers").
#if defined(LWLOAD_LAYER_CORE) && !defined(LWLOAD_LAYER_LOADING)
#error \
    "lwload layering: include/lwload/loader.hpp (layer loading) is not below this layer (the layer table in meson.build says what each layer may include)"
#endif

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lwload/backend.hpp"
#include "lwload/file_system.hpp"
#include "lwload/manifest.hpp"
#include "lwload/plan.hpp"
#include "lwload/tensor_handle.hpp"
#include "lwload/export.h"

namespace lwload {

// Cancels a load from any thread; the loader checks it between chunks and throws
// Error(cancelled) after releasing everything.
class LWLOAD_API CancelToken {
 public:
  void cancel() noexcept { cancelled_.store(true, std::memory_order_relaxed); }
  bool cancelled() const noexcept { return cancelled_.load(std::memory_order_relaxed); }

 private:
  std::atomic<bool> cancelled_{false};
};

// What the profiler's timeline records (lwload profile).
struct LoadEvent {
  enum class Kind : std::uint8_t {
    phase,           // `phase` begins, in this order: "import" (only with zero_copy regions),
                     // "allocate", "populate" (zero_copy pages made resident; not when lazy),
                     // "read" (reads and uploads), "finish" (waiting for the device), "done"
    tensor_start,    // the first byte of `tensor` is requested (or its pages populated)
    tensor_end,      // `tensor` is complete on the device (its ready callback follows)
    bytes_read,      // `bytes` arrived from the file (into a staging slot or a direct buffer)
    bytes_uploaded,  // `bytes` left a staging slot for the device (the slot part is free again)
  };
  Kind kind = Kind::phase;
  std::chrono::steady_clock::time_point time;
  std::size_t tensor = static_cast<std::size_t>(-1);  // the tensor's index (TensorPlan), when about one
  std::uint64_t bytes = 0;                            // bytes_read / bytes_uploaded: this chunk
  std::uint64_t in_flight = 0;                        // staging bytes read but not yet uploaded, after this event
  std::string_view phase;                             // Kind::phase: its name (static storage)
};

struct LoadOptions {
  // Used when load() makes the plan itself. With a plan handed in, only `plan.machine` is read:
  // when set, the machine the plan's fit is checked against instead of machine_memory() now.
  PlanOptions plan;
  // zero_copy tensors are reported ready once their pages are resident (read from the file and
  // mapped), so first use does not fault; lazy = ready as soon as the import exists, pages fault
  // in on first use.
  bool lazy = false;
  std::shared_ptr<CancelToken> cancel;

  // Each loaded tensor once, in load order (the manifest's; skipped tensors get none), when its
  // bytes are on the device. A tensor that completes early waits for those before it.
  std::function<void(const TensorHandle&)> on_tensor_ready;
  // Bytes of tensor data on the device so far, of `total` (Plan::model_bytes).
  std::function<void(std::uint64_t done, std::uint64_t total)> on_progress;
  std::function<void(const LoadEvent&)> on_event;
};

// How LoadStats::resident_bytes is known.
enum class ResidentCount : std::uint8_t {
  counted,    // cachestat(2) per region when load() returned (or mincore over every page of a small one)
  populated,  // kernels before 6.5, not lazy: population had just made every page resident (it
              // throws otherwise), so no page is walked again to count them
  sampled,    // kernels before 6.5, lazy: estimated from mincore on a fixed number of pages per
              // region (io::kSampledPages), a cost that does not grow with the file
};

struct LoadStats {
  double seconds = 0;                                     // load() from start to return
  double allocate_seconds = 0;                            // allocations + imports
  double populate_seconds = 0;                            // making zero_copy pages resident (0 when lazy)
  std::uint64_t zero_copy_bytes = 0;                      // bytes of zero_copy tensors
  std::uint64_t resident_bytes = 0;                       // resident when load() returned, at most zero_copy_bytes
  ResidentCount resident_count = ResidentCount::counted;  // how resident_bytes is known
  std::uint64_t bytes_read = 0;                           // file bytes read (direct + staged, incl. alignment slack)
  std::uint64_t bytes_uploaded = 0;                       // bytes passed to Device::upload
  std::size_t reads = 0;                                  // read calls issued
  std::size_t uploads = 0;
};

// How many file bytes were read which way: measurements only. What was decided — the engine,
// O_DIRECT or buffered, and why, including a mechanism refused at load — is in Weights::plan()
// (Plan::schedule.engine / engine_reason, Plan::direct_io / direct_io_reason).
struct IoReport {
  std::uint64_t direct_io_bytes = 0;  // read with O_DIRECT (staged reads, aligned slack included)
  std::uint64_t buffered_bytes = 0;   // read through the page cache (direct, runs, staged, encoded)
};

// The loaded model. Owns the device buffers, the imported regions and the file mappings behind
// them (mappings outlive the buffers made from them). Backends' buffers keep alive what they need
// of their runtime, so Weights may outlive the Device they were loaded onto. It also remembers
// each file's identity, so verify() can tell a file that changed since.
class LWLOAD_API Weights {
 public:
  struct State;
  explicit Weights(std::unique_ptr<State> state);
  Weights(Weights&&) noexcept;
  Weights& operator=(Weights&&) noexcept;
  ~Weights();

  const TensorHandle* find(std::string_view name) const noexcept;
  // One per manifest tensor, at its index; skipped ones (not selected, empty, STRING) have no buffer.
  std::span<const TensorHandle> tensors() const noexcept;
  const Manifest& manifest() const noexcept;
  // The plan as executed, the record of what ran: a zero_copy region the device declined became
  // direct, and a mechanism refused when the reads were set up (O_DIRECT by the file system or
  // the device's staging slots, io_uring by the kernel) was re-planned away — each by the planner,
  // with the reason (TensorPlan::reason, Plan::direct_io_reason, Schedule::engine_reason).
  const Plan& plan() const noexcept;
  const DeviceInfo& device() const noexcept;
  const IoReport& io() const noexcept;
  const LoadStats& stats() const noexcept;
  // Per manifest file, its identity when the load opened it ({} for files the load did not use).
  const std::vector<FileIdentity>& file_identities() const noexcept;
  // Manifest file `index` as the load read it, kept open (verify() reads it again); nullptr for
  // files the load did not use.
  const RandomAccessFile* file(std::size_t index) const noexcept;

  // Copies bytes [offset, offset + dst.size()) of a tensor back from the device.
  void read_back(const TensorHandle& tensor, std::uint64_t offset, std::span<std::byte> dst) const;

 private:
  std::unique_ptr<State> state_;
};

// Plans (with options.plan) and loads. The Weights keep a copy of the manifest (their handles
// point into it); pass it as an rvalue to move it in instead — with millions of tensors the copy
// is most of the loader's own memory.
LWLOAD_API Weights load(const Manifest& manifest, Device& device, const LoadOptions& options = {});
LWLOAD_API Weights load(Manifest&& manifest, Device& device, const LoadOptions& options = {});
// Loads with a plan made earlier by make_plan for this manifest and this device. The plan's choices
// (placements, regions' tensors, options) are kept; every figure that follows from them (region
// geometry, tensor offsets in regions, the staging ring, byte totals, host-memory figures) is
// derived again, and one that differs is refused with Error(usage) naming the field and the
// region or tensor. Its fit is checked again — the device as make_plan checks it, the host memory
// against the machine now (options.plan.machine when set) — and a plan that no longer fits is
// refused with Error(does_not_fit) before anything is opened. The schedule is made again.
LWLOAD_API Weights load(const Manifest& manifest, Device& device, const Plan& plan, const LoadOptions& options = {});
LWLOAD_API Weights load(Manifest&& manifest, Device& device, Plan plan, const LoadOptions& options = {});

struct VerifyReport {
  std::size_t tensors = 0;  // tensors compared
  std::uint64_t bytes = 0;
};

// Reads every loaded tensor back from the device and compares it with the file (encoded tensors
// with their decoded bytes), in bounded chunks. Throws Error(device) naming the tensor and the
// first differing byte on a mismatch, Error(io) naming the file when it changed since the load
// (identity) or its mapped pages can no longer be read, Error(unsupported) "... not verifiable"
// when the device cannot read back (the null device). It reads the files the load read (Weights::file).
LWLOAD_API VerifyReport verify(const Weights& weights);

}  // namespace lwload
