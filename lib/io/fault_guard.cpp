// SIGBUS → a return value, for reads lwload makes through file mappings. Written by hand because
// no library in Debian's main archive offers it: while any guarded call runs, a process-wide
// handler jumps back when the faulting thread is inside one, and otherwise hands the signal to the
// previous disposition, so the application's own handling is unchanged.
#include "io/fault_guard.hpp"

#include <atomic>
#include <csetjmp>
#include <csignal>
#include <cstring>
#include <mutex>

namespace lwload::io {
namespace {

thread_local sigjmp_buf* t_jump = nullptr;
std::mutex g_mutex;
int g_guards = 0;                   // guarded calls running, on all threads
struct sigaction g_previous {};     // the disposition before the first of them

void on_sigbus(int signal, siginfo_t* info, void* context) {
  if (sigjmp_buf* jump = t_jump) siglongjmp(*jump, 1);
  // Not ours: behave as if lwload's handler were not there.
  if (g_previous.sa_flags & SA_SIGINFO) {
    if (g_previous.sa_sigaction) return g_previous.sa_sigaction(signal, info, context);
  } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN && g_previous.sa_handler) {
    return g_previous.sa_handler(signal);
  }
  ::sigaction(SIGBUS, &g_previous, nullptr);
  ::raise(signal);
}

// The handler is ours only while a guarded call runs, so whatever the application (or a test
// framework) installs at other times stays in charge then.
void enter() {
  const std::lock_guard lock(g_mutex);
  if (g_guards++ > 0) return;
  struct sigaction action {};
  action.sa_sigaction = on_sigbus;
  action.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGBUS, &action, &g_previous);
}

void leave() {
  const std::lock_guard lock(g_mutex);
  if (--g_guards == 0) ::sigaction(SIGBUS, &g_previous, nullptr);
}

template <typename Body>
bool guarded(Body&& body) noexcept {
  enter();
  sigjmp_buf jump;
  sigjmp_buf* const outer = t_jump;
  if (sigsetjmp(jump, 1) != 0) {
    t_jump = outer;
    leave();
    return false;
  }
  t_jump = &jump;
  // The handler reads t_jump: keep the compiler from moving the stores across the guarded body
  // (it may otherwise sink them past a memcpy it knows does not touch t_jump).
  std::atomic_signal_fence(std::memory_order_seq_cst);
  body();
  std::atomic_signal_fence(std::memory_order_seq_cst);
  t_jump = outer;
  leave();
  return true;
}

}  // namespace

bool copy_guarded(void* dst, const void* src, std::size_t n) noexcept {
  if (n == 0) return true;
  return guarded([&] { std::memcpy(dst, src, n); });
}

bool touch_guarded(const void* begin, std::size_t n, std::size_t stride) noexcept {
  const auto* bytes = static_cast<const volatile unsigned char*>(begin);
  return guarded([&] {
    unsigned char sink = 0;
    for (std::size_t i = 0; i < n; i += stride) sink ^= bytes[i];
    if (n > 0) sink ^= bytes[n - 1];
    (void)sink;
  });
}

}  // namespace lwload::io
