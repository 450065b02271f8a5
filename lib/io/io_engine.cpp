// The io_uring run-time probe and the IoEngine names.
#include "io/io_engine.hpp"

#include <cstring>

#if LWLOAD_HAVE_IO_URING
#include <liburing.h>
#endif

#include "lwload/error.hpp"
#include "lwload/plan.hpp"

namespace lwload {

std::string_view io_engine_name(IoEngine engine) noexcept {
  switch (engine) {
    case IoEngine::auto_: return "auto";
    case IoEngine::io_uring: return "io_uring";
    case IoEngine::pread: return "pread";
  }
  return "?";
}

IoEngine parse_io_engine(std::string_view text) {
  if (text == "auto" || text.empty()) return IoEngine::auto_;
  if (text == "io_uring" || text == "io-uring" || text == "uring") return IoEngine::io_uring;
  if (text == "pread") return IoEngine::pread;
  fail(ErrorCode::usage, "io engine '", text, "': expected auto, io_uring or pread");
}

namespace io {

const UringProbe& probe_io_uring() {
  static const UringProbe probe = [] {
    UringProbe result;
#if LWLOAD_HAVE_IO_URING
    io_uring ring{};
    const int rc = ::io_uring_queue_init(4, &ring, 0);
    if (rc < 0) {
      result.note = str("io_uring_queue_init: ", std::strerror(-rc));
    } else {
      ::io_uring_queue_exit(&ring);
      result.usable = true;
    }
#else
    result.note = "built without liburing";
#endif
    return result;
  }();
  return probe;
}

}  // namespace io
}  // namespace lwload
