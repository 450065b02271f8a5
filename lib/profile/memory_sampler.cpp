// Reads this process's resident set from /proc/self/status and samples it on a thread.
// The sampler keeps one descriptor open and pread()s into a stack buffer: no allocation and no
// growth of the memory it measures while the load runs.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "lwload/error.hpp"
#include "lwload/profile.hpp"

namespace lwload::profile {
namespace {

constexpr const char* kStatusPath = "/proc/self/status";

// "VmRSS:\t  1744 kB" → 1744 * 1024. Returns false when `key` is not a line of `text`.
bool field_kib(std::string_view text, std::string_view key, std::uint64_t& out) noexcept {
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t eol = std::min(text.find('\n', at), text.size());
    const std::string_view line = text.substr(at, eol - at);
    if (line.size() > key.size() && line.starts_with(key) && line[key.size()] == ':') {
      std::uint64_t value = 0;
      bool digits = false;
      for (std::size_t i = key.size() + 1; i < line.size(); ++i) {
        const char c = line[i];
        if (c >= '0' && c <= '9') {
          value = value * 10 + static_cast<std::uint64_t>(c - '0');
          digits = true;
        } else if (digits) {
          break;
        }
      }
      if (!digits) return false;
      out = value * 1024;  // the kernel always reports these in kB
      return true;
    }
    at = eol + 1;
  }
  return false;
}

int open_status() {
  const int fd = ::open(kStatusPath, O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(ErrorCode::io, kStatusPath, ": cannot open: ", std::strerror(errno));
  return fd;
}

// One reading through an open descriptor; false on a read error.
bool read_status(int fd, MemorySample& out) noexcept {
  char text[8192];  // status is ~1.5 KiB; the fields we need come early
  const ssize_t n = ::pread(fd, text, sizeof text, 0);
  if (n <= 0) return false;
  return parse_status(std::string_view(text, static_cast<std::size_t>(n)), out);
}

}  // namespace

bool parse_status(std::string_view text, MemorySample& out) noexcept {
  MemorySample s = out;
  if (!field_kib(text, "VmRSS", s.rss) || !field_kib(text, "RssAnon", s.anon) || !field_kib(text, "RssFile", s.file) ||
      !field_kib(text, "RssShmem", s.shmem))
    return false;
  if (!field_kib(text, "VmHWM", s.hwm)) s.hwm = s.rss;
  out = s;
  return true;
}

MemorySample read_memory_now() {
  const int fd = open_status();
  MemorySample s;
  const bool ok = read_status(fd, s);
  ::close(fd);
  if (!ok) fail(ErrorCode::io, kStatusPath, ": cannot read VmRSS/RssAnon/RssFile/RssShmem");
  return s;
}

std::optional<Proportional> read_pss_now() {
  const int fd = ::open("/proc/self/smaps_rollup", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  char text[4096];  // smaps_rollup is ~1 KiB
  const ssize_t n = ::pread(fd, text, sizeof text, 0);
  ::close(fd);
  if (n <= 0) return std::nullopt;
  const std::string_view view(text, static_cast<std::size_t>(n));
  Proportional p;
  if (!field_kib(view, "Pss", p.pss)) return std::nullopt;
  field_kib(view, "Pss_Anon", p.pss_anon);  // Linux ≥ 5.8
  field_kib(view, "Pss_File", p.pss_file);
  return p;
}

bool reset_peak_rss() noexcept {
  const int fd = ::open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::write(fd, "5", 1) == 1;
  ::close(fd);
  return ok;
}

MemorySampler::MemorySampler(std::chrono::microseconds period, std::size_t capacity, Clock::time_point origin)
    : period_(std::max(period, std::chrono::microseconds(100))),
      origin_(origin),
      buffer_(std::max<std::size_t>(capacity, 16)) {}  // value-initialised: the pages are touched now

MemorySampler::~MemorySampler() {
  stop();
  if (status_fd_ >= 0) ::close(status_fd_);
}

double MemorySampler::ms_since_origin(Clock::time_point t) const noexcept {
  return std::chrono::duration<double, std::milli>(t - origin_).count();
}

void MemorySampler::record(const MemorySample& s) noexcept {
  peak_.rss = std::max(peak_.rss, s.rss);
  peak_.anon = std::max(peak_.anon, s.anon);
  peak_.file = std::max(peak_.file, s.file);
  peak_.shmem = std::max(peak_.shmem, s.shmem);
  peak_.hwm = std::max(peak_.hwm, s.hwm);
  ++taken_;
  if (phase_++ % stride_ != 0) {
    // Between kept readings: fold a higher reading into the last kept one so peaks survive.
    if (count_ > 0 && s.rss > buffer_[count_ - 1].rss) {
      const double ms = buffer_[count_ - 1].ms;
      buffer_[count_ - 1] = s;
      buffer_[count_ - 1].ms = ms;
    }
    return;
  }
  if (count_ == buffer_.size()) {
    // Full: merge pairs (keeping the larger RSS) and keep half as many readings from now on.
    for (std::size_t i = 0; i < count_ / 2; ++i) {
      const MemorySample& a = buffer_[2 * i];
      const MemorySample& b = buffer_[2 * i + 1];
      MemorySample merged = b.rss > a.rss ? b : a;
      merged.ms = a.ms;
      buffer_[i] = merged;
    }
    count_ /= 2;
    stride_ *= 2;
    phase_ = 1;
  }
  buffer_[count_++] = s;
}

void MemorySampler::start() {
  if (thread_.joinable()) return;
  if (status_fd_ < 0) status_fd_ = open_status();
  MemorySample first;
  if (!read_status(status_fd_, first)) fail(ErrorCode::io, kStatusPath, ": cannot parse");
  first.ms = ms_since_origin(Clock::now());
  record(first);
  stop_.store(false);
  thread_ = std::thread([this] { run(); });
}

void MemorySampler::run() {
  auto next = Clock::now();
  while (!stop_.load(std::memory_order_relaxed)) {
    next += period_;
    std::this_thread::sleep_until(next);
    MemorySample s;
    if (!read_status(status_fd_, s)) continue;
    s.ms = ms_since_origin(Clock::now());
    record(s);
    // After a stall (suspended process, busy machine) resume the cadence instead of bursting.
    if (Clock::now() > next + 10 * period_) next = Clock::now();
  }
}

void MemorySampler::stop() {
  if (!thread_.joinable()) return;
  stop_.store(true);
  thread_.join();
  MemorySample last;
  if (read_status(status_fd_, last)) {
    last.ms = ms_since_origin(Clock::now());
    record(last);
  }
}

std::vector<MemorySample> MemorySampler::samples() const {
  return {buffer_.begin(), buffer_.begin() + static_cast<std::ptrdiff_t>(count_)};
}

}  // namespace lwload::profile
