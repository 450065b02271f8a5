// The memory profiler: proves the memory contracts of docs/ARCHITECTURE.md on a real load. A sampler thread reads
// this process's resident set (split into anonymous / file-backed / shared pages) every few
// milliseconds, a Timeline records what the loader was doing (phases, tensors, bytes in flight),
// and a Report puts baseline, peak, the contract's bound and whether it held side by side, with
// JSON, CSV and SVG writers. `lwload profile` and `lwload bench` are built on it.
#pragma once

// Layer profile's public header: refused below profile in lwload's build (docs/ARCHITECTURE.md, "Layers").
#if defined(LWLOAD_LAYER_CORE) && !defined(LWLOAD_LAYER_PROFILE)
#error \
    "lwload layering: include/lwload/profile.hpp (layer profile) is not below this layer (the layer table in meson.build says what each layer may include)"
#endif

#include <atomic>
#include <functional>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "lwload/device.hpp"
#include "lwload/loader.hpp"
#include "lwload/export.h"

namespace lwload::profile {

using Clock = std::chrono::steady_clock;

// One reading of /proc/self/status. Bytes; `ms` is the time since the sampler's origin.
struct MemorySample {
  double ms = 0;
  std::uint64_t rss = 0;    // VmRSS = anon + file + shmem
  std::uint64_t anon = 0;   // RssAnon: heap, stacks, anonymous mappings (copies of weights)
  std::uint64_t file = 0;   // RssFile: mapped file pages (zero-copy weights live here)
  std::uint64_t shmem = 0;  // RssShmem: shared memory, memfd, some driver buffers
  std::uint64_t hwm = 0;    // VmHWM: the kernel's own high-water mark of VmRSS
};

// Parses the text of /proc/<pid>/status into `out` (ms untouched). False when a field is missing.
// No allocation: safe to call from the sampler thread every few milliseconds.
LWLOAD_API bool parse_status(std::string_view text, MemorySample& out) noexcept;

// Reads /proc/self/status now. Throws Error(io) when /proc is unavailable.
LWLOAD_API MemorySample read_memory_now();

// Proportional set size (/proc/self/smaps_rollup): each shared page counted 1/N for N processes
// mapping it — how much of a zero-copy model this process really costs when others map it too.
struct Proportional {
  std::uint64_t pss = 0;
  std::uint64_t pss_anon = 0;
  std::uint64_t pss_file = 0;
};
// nullopt where the kernel has no smaps_rollup (before 4.14) or /proc is unreadable. Walks every
// mapping, so it is read at the baseline and after the load, not by the sampler.
LWLOAD_API std::optional<Proportional> read_pss_now();

// Resets the kernel's VmHWM to the current RSS (writes 5 to /proc/self/clear_refs), so a later
// VmHWM is the exact peak since this call — no sample can miss it. False when not permitted.
LWLOAD_API bool reset_peak_rss() noexcept;

// Samples memory on its own thread from start() to stop(). Storage is allocated (and touched) up
// front so sampling never grows the resident set it measures; when it fills, neighbouring samples
// are merged (keeping the larger RSS) and the stride doubles, so any load length fits.
class LWLOAD_API MemorySampler {
 public:
  explicit MemorySampler(std::chrono::microseconds period = std::chrono::milliseconds(2), std::size_t capacity = 8192,
                         Clock::time_point origin = Clock::now());
  ~MemorySampler();
  MemorySampler(const MemorySampler&) = delete;
  MemorySampler& operator=(const MemorySampler&) = delete;

  // Starts the thread after taking a first sample synchronously. Throws Error(io) without /proc.
  void start();
  // Takes a last sample and joins the thread. Idempotent.
  void stop();

  Clock::time_point origin() const noexcept { return origin_; }
  double ms_since_origin(Clock::time_point t) const noexcept;

  // Valid after stop(): the samples in time order, and the per-field maxima over every reading
  // taken (merged-away samples included). peak().hwm is VmHWM at stop().
  std::vector<MemorySample> samples() const;
  MemorySample peak() const noexcept { return peak_; }
  std::uint64_t readings() const noexcept { return taken_; }

 private:
  void run();
  void record(const MemorySample& s) noexcept;

  std::chrono::microseconds period_;
  Clock::time_point origin_;
  std::vector<MemorySample> buffer_;  // fixed size; [0, count_) used
  std::size_t count_ = 0;
  std::uint64_t stride_ = 1;  // keep one reading in `stride_`
  std::uint64_t phase_ = 0;   // readings since the stride last changed (the stride's clock)
  std::uint64_t taken_ = 0;   // readings taken in all
  MemorySample peak_{};
  int status_fd_ = -1;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// What the loader was doing, on the sampler's time axis. Thread-safe: the loader reports from
// its I/O and completion threads.
struct PhaseSpan {
  std::string name;  // "allocate", "read", "upload", "verify", ...
  double begin_ms = 0;
  double end_ms = 0;
};
struct TensorSpan {
  std::size_t tensor = 0;
  double begin_ms = 0;
  double end_ms = 0;
  std::uint64_t bytes = 0;
};
struct InFlightPoint {
  double ms = 0;
  std::uint64_t bytes = 0;  // bytes read into staging but not yet uploaded
};

class LWLOAD_API Timeline {
 public:
  explicit Timeline(Clock::time_point origin) : origin_(origin) {}

  void phase_begin(std::string_view name, Clock::time_point t);
  void phase_end(std::string_view name, Clock::time_point t);
  void tensor_begin(std::size_t tensor, std::uint64_t bytes, Clock::time_point t);
  void tensor_end(std::size_t tensor, Clock::time_point t);
  void in_flight(std::uint64_t bytes, Clock::time_point t);

  // Copies, with open spans closed at `end`.
  std::vector<PhaseSpan> phases(Clock::time_point end) const;
  std::vector<TensorSpan> tensors(Clock::time_point end) const;
  std::vector<InFlightPoint> in_flight_points() const;
  std::uint64_t max_in_flight() const;

 private:
  double ms(Clock::time_point t) const noexcept;

  Clock::time_point origin_;
  mutable std::mutex mutex_;
  std::vector<PhaseSpan> phases_;
  std::vector<TensorSpan> tensors_;
  std::vector<std::uint32_t> open_;  // per tensor index: its open span's position + 1, or 0
  std::vector<InFlightPoint> in_flight_;
};

// The four memory figures the report compares.
struct MemoryFigures {
  std::uint64_t rss = 0, anon = 0, file = 0, shmem = 0;
};
// "12.3 MiB": how every profile report and bench table prints a memory figure.
LWLOAD_API std::string mib(std::uint64_t bytes);

LWLOAD_API MemoryFigures figures_of(const MemorySample& s) noexcept;
// a - b per field, clamped at 0 (memory can shrink below the baseline).
LWLOAD_API MemoryFigures growth(const MemoryFigures& a, const MemoryFigures& b) noexcept;

// Fixed host overhead the discrete contract allows beyond the staging budget: thread stacks,
// the plan, bookkeeping. Independent of model size.
inline constexpr std::uint64_t kFixedOverhead = 16ull << 20;
// Anonymous growth a zero-copy load may show ("≈ 0").
inline constexpr std::uint64_t kZeroCopyAnonLimit = 16ull << 20;
// lwload's own records per loaded tensor (its handle, plan entry share, name index, progress;
// measured ~200 B): the allowance grows by this much per tensor, so a header listing a million
// tiny tensors is judged on its data, not on bookkeeping the contract's fixed allowance never meant.
inline constexpr std::uint64_t kBookkeepingPerTensor = 256;

// What the contract depends on, from the device and the plan.
struct ContractInputs {
  MemoryModel memory = MemoryModel::unified;
  std::uint64_t model_bytes = 0;
  std::uint64_t largest_tensor = 0;
  std::uint64_t staging_budget = 0;
  std::uint64_t zero_copy_bytes = 0;  // bytes of tensors placed zero_copy
  std::uint64_t direct_bytes = 0;     // ... direct
  std::uint64_t staged_bytes = 0;     // ... staged
  // Staged buffers live in this process's memory (host backend, PoCL forced discrete); their
  // bytes then count against the bound. False for real device memory and the null backend.
  bool device_buffers_in_process = false;
  // Mapped bytes beyond the zero_copy tensors themselves: each region's pages are whole pages,
  // and the padding between its tensors is mapped too.
  std::uint64_t page_rounding = 0;
  std::uint64_t resident_bytes = 0;  // of the zero_copy regions when load() returned
  bool lazy = false;                 // zero_copy pages were not populated (LoadOptions::lazy)
  std::uint64_t tensor_count = 0;    // tensors loaded: kBookkeepingPerTensor each on top of 16 MiB
  // The plan's host-memory figures and the machine it was checked against (docs/ARCHITECTURE.md "Over-memory
  // loads"): the contract also holds the load to them — what the plan said must be resident fits
  // what the machine had, and the measured growth stays within it.
  HostMemory host = {};
};

struct Contract {
  std::string rule;                                // the memory contract's rule applied, in words
  std::uint64_t bound = 0;                         // absolute: peak RSS must stay at or below it
  std::optional<std::uint64_t> anon_growth_limit;  // zero-copy: anonymous growth ≤ this
  bool held = false;
  std::string verdict;  // why it held or not, with the numbers
};

// The bound docs/ARCHITECTURE.md "Memory contracts" promises:
//  - unified, no staged tensor: baseline + model bytes + largest tensor + 16 MiB (readahead,
//    bookkeeping) + page rounding of the regions; with zero_copy tensors, anonymous growth also
//    ≤ 16 MiB (the growth must be file-backed pages) and, unless lazy, ≥ 90 % of the zero_copy
//    bytes resident when load() returns ("ready means resident");
//  - discrete (or any staged tensor): baseline + staging budget + 16 MiB, plus the bytes of
//    buffers that live in this process (unified placements, or in-process device memory);
//  - either way, when the machine's available memory was known at plan time: the plan's resident
//    bytes (pinned + anonymous, + evictable unless lazy) ≤ it, and the measured RSS growth ≤ it.
//    A lazy load with evictable pages is reported as not resident at ready.
LWLOAD_API Contract evaluate_contract(const ContractInputs& in, const MemoryFigures& baseline,
                                      const MemoryFigures& peak);

// Everything `lwload profile` prints and writes.
struct Report {
  std::string model;
  std::string format;
  std::string device;     // "host:0 (CPU)"
  std::string memory;     // "unified" / "discrete"
  std::string placement;  // "zero_copy", "direct", "staged", or "mixed (...)"
  std::string io_engine;
  bool direct_io = false;  // staged tensors were read with O_DIRECT
  std::uint64_t tensor_count = 0;
  std::uint64_t model_bytes = 0;
  std::uint64_t largest_tensor = 0;
  std::string largest_tensor_name;
  std::uint64_t staging_budget = 0;
  double load_begin_ms = 0;                              // when load() was called, on the samples' time axis
  double load_ms = 0;                                    // load() until the weights were ready
  double populate_ms = 0;                                // of which making zero_copy pages resident
  std::optional<Proportional> pss_baseline, pss_loaded;  // before load(), and once it returned
  double period_ms = 0;
  MemoryFigures baseline, peak, growth;
  bool hwm_exact = false;  // peak.rss includes the kernel's VmHWM (reset before the load)
  ContractInputs inputs;
  Contract contract;
  std::vector<MemorySample> samples;
  std::vector<PhaseSpan> phases;
  std::vector<TensorSpan> tensors;
  std::vector<InFlightPoint> in_flight;
  std::uint64_t max_in_flight = 0;
};

// Fills baseline/peak/growth/contract from samples already in the report.
LWLOAD_API void finish_report(Report& report, const MemorySample& baseline, const MemorySample& peak, bool hwm_exact);

// The human summary `lwload profile` prints.
LWLOAD_API void write_summary(std::ostream& out, const Report& report);
// One JSON object: figures, contract, and the timeline (samples, phases, tensors).
LWLOAD_API std::string report_to_json(const Report& report);
// One row per sample: ms,rss,anon,file,shmem (bytes), plus in_flight at that time.
LWLOAD_API std::string report_to_csv(const Report& report);
// A self-contained SVG timeline: memory curves, baseline / model / bound lines, load phases.
LWLOAD_API std::string report_to_svg(const Report& report);

// Reads back what report_to_json wrote: figures, contract, samples and phases (not tensors or
// bytes in flight). Throws Error(bad_input) naming the missing or mistyped field.
LWLOAD_API Report report_from_json(std::string_view json);

// `lwload profile --compare`: loaders profiled each in its own process (so each has its own
// baseline and none inherits another's heap), then drawn and summarised together.
struct Series {
  std::string label;  // "naive read+copy", "lwload zero_copy"
  Report report;
};
// One SVG, one time axis (ms since each load began) and one memory axis (MiB above each
// process's own baseline): every series' anonymous (solid) and file-backed (dashed) growth, its
// peaks labelled on the curves, its time to ready marked, its phases shaded in a lane below.
LWLOAD_API std::string comparison_to_svg(const std::vector<Series>& series);
// One line per series (peaks, time to ready, verdict), each earlier series against the last (the
// ratios), and an "in short:" line with every series' anonymous growth, shared pages and time.
LWLOAD_API void write_comparison_summary(std::ostream& out, const std::vector<Series>& series);

// Runs `body` between a baseline reading and a stopped sampler: its time and memory peak. The
// kernel's VmHWM is reset first, so the total peak is exact; anon/file/shmem peaks are sampled.
struct Measurement {
  double seconds = 0;
  MemorySample baseline;
  MemorySample peak;  // per-field maxima; rss includes VmHWM when hwm_exact
  bool hwm_exact = false;
  MemoryFigures growth() const noexcept { return profile::growth(figures_of(peak), figures_of(baseline)); }
};
LWLOAD_API Measurement measure(const std::function<void()>& body,
                               std::chrono::microseconds period = std::chrono::milliseconds(2));

struct ProfileOptions {
  LoadOptions load;  // its on_event, if any, still runs after the profiler's
  std::chrono::microseconds period = std::chrono::milliseconds(2);
  bool verify = false;  // read every tensor back (a "verify" phase on the timeline)
  // Whether staged "device" buffers are this process's memory; nullopt = CPU devices (host,
  // OpenCL on a CPU) yes, others no.
  std::optional<bool> device_buffers_in_process;
};

// Plans and loads `manifest` on `device` (already open: the baseline is taken after device
// initialisation, just before the load) while sampling memory, then evaluates the contract.
// The weights are released before it returns. Load errors propagate as lwload::Error.
LWLOAD_API Report profile_load(const Manifest& manifest, Device& device, const ProfileOptions& options = {});

}  // namespace lwload::profile
