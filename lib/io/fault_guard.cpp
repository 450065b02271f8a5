// Reads through file mappings that report a lost page as a value, with no signal handler at all.
// A truncated file turns an access to its lost pages into SIGBUS; a handler would have to share
// the process's one SIGBUS disposition with the application (and with every thread of it), so
// instead the kernel does the reading: process_vm_readv on our own process copies through the
// page tables and answers EFAULT where a plain load would raise SIGBUS. Where a sandbox refuses
// that call (seccomp: ENOSYS / EPERM), the bytes go through a pipe instead — write(2) from a lost
// page is EFAULT too. Written by hand: no library in Debian's main archive offers this.
#include "io/fault_guard.hpp"
#include "io/kernel_features.hpp"

#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdint>

namespace lwload::io {
namespace {

// Whether process_vm_readv is refused: asked once per process (io/kernel_features, which `lwload
// doctor` reports too), and learnt again should a copy be refused after all (a filter installed
// on one thread later).
std::atomic<bool> g_vm_readv_refused{false};
bool vm_readv_refused() noexcept { return !vm_readv().available || g_vm_readv_refused.load(std::memory_order_relaxed); }

enum class Copy { done, lost, refused };

Copy copy_vm_readv(std::byte* dst, const std::byte* src, std::size_t n) noexcept {
  const pid_t self = ::getpid();
  while (n > 0) {
    iovec local{dst, n};
    iovec remote{const_cast<std::byte*>(src), n};
    const ssize_t got = ::process_vm_readv(self, &local, 1, &remote, 1, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      if (errno == ENOSYS || errno == EPERM) return Copy::refused;
      return Copy::lost;  // EFAULT: a page of src is beyond the end of its file
    }
    if (got == 0) return Copy::lost;
    dst += got;
    src += got;
    n -= static_cast<std::size_t>(got);
  }
  return Copy::done;
}

// The fallback's pipe: one per thread, made at its first fallback copy and closed when the thread
// ends, so a refused process_vm_readv costs two calls per copy (write, read) and no more; a pipe
// per copy was three more (pipe, close, close) on every 32 MiB chunk populated. Each thread its
// own, so no two copies share one. Always left empty: a copy reads back all it wrote, or fails.
class ThreadPipe {
 public:
  ThreadPipe() {
    if (::pipe2(fds_, O_CLOEXEC) != 0) fds_[0] = fds_[1] = -1;
  }
  ~ThreadPipe() { reset(); }
  ThreadPipe(const ThreadPipe&) = delete;
  ThreadPipe& operator=(const ThreadPipe&) = delete;
  bool ok() const noexcept { return fds_[0] >= 0; }
  int in() const noexcept { return fds_[1]; }
  int out() const noexcept { return fds_[0]; }
  // After a failed copy the pipe may hold bytes: a fresh one for the next copy.
  void renew() noexcept {
    reset();
    if (::pipe2(fds_, O_CLOEXEC) != 0) fds_[0] = fds_[1] = -1;
  }

 private:
  void reset() noexcept {
    if (fds_[0] >= 0) ::close(fds_[0]), ::close(fds_[1]);
    fds_[0] = fds_[1] = -1;
  }
  int fds_[2];
};

// The fallback: the kernel copies src into a pipe (EFAULT on a lost page) and back out.
bool copy_through_pipe(std::byte* dst, const std::byte* src, std::size_t n) noexcept {
  thread_local ThreadPipe pipe;
  if (!pipe.ok()) pipe.renew();
  if (!pipe.ok()) return false;
  bool ok = true;
  while (ok && n > 0) {
    const std::size_t chunk = std::min<std::size_t>(n, 16 * 1024);  // below any pipe's capacity
    ssize_t wrote;
    do wrote = ::write(pipe.in(), src, chunk);
    while (wrote < 0 && errno == EINTR);
    if (wrote <= 0) {
      ok = false;
      break;
    }
    for (ssize_t left = wrote; left > 0;) {
      const ssize_t got = ::read(pipe.out(), dst, static_cast<std::size_t>(left));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        ok = false;
        break;
      }
      dst += got;
      left -= got;
    }
    src += wrote;
    n -= static_cast<std::size_t>(wrote);
  }
  if (!ok) pipe.renew();
  return ok;
}

}  // namespace

bool copy_guarded(void* dst, const void* src, std::size_t n) noexcept {
  if (n == 0) return true;
  auto* out = static_cast<std::byte*>(dst);
  const auto* in = static_cast<const std::byte*>(src);
  if (!vm_readv_refused()) {
    switch (copy_vm_readv(out, in, n)) {
      case Copy::done: return true;
      case Copy::lost: return false;
      case Copy::refused: g_vm_readv_refused.store(true, std::memory_order_relaxed); break;
    }
  }
  return copy_through_pipe(out, in, n);
}

bool touch_guarded(const void* begin, std::size_t n, std::size_t stride) noexcept {
  if (n == 0) return true;
  // One byte per stride (and the last byte), gathered a batch at a time by one kernel copy.
  const auto* bytes = static_cast<const std::byte*>(begin);
  std::array<std::byte, 256> sink{};
  std::array<iovec, sink.size()> remote{};
  std::size_t offset = 0;
  for (bool done = false; !done;) {
    std::size_t count = 0;
    while (count < remote.size() && !done) {
      remote[count++] = {const_cast<std::byte*>(bytes + offset), 1};
      done = offset == n - 1;
      offset = std::min(offset + stride, n - 1);
    }
    if (!vm_readv_refused()) {
      const iovec local{sink.data(), count};
      ssize_t got;
      do got = ::process_vm_readv(::getpid(), &local, 1, remote.data(), count, 0);
      while (got < 0 && errno == EINTR);
      if (got == static_cast<ssize_t>(count)) continue;
      if (got >= 0 || (errno != ENOSYS && errno != EPERM)) return false;  // a lost page
      g_vm_readv_refused.store(true, std::memory_order_relaxed);
    }
    for (std::size_t i = 0; i < count; ++i)
      if (!copy_through_pipe(&sink[i], static_cast<const std::byte*>(remote[i].iov_base), 1)) return false;
  }
  return true;
}

}  // namespace lwload::io
