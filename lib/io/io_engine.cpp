// The io_uring run-time probe and the IoEngine names.
#include "io/io_engine.hpp"

#include <cstring>
#include <utility>

#if LWLOAD_HAVE_IO_URING
#include <liburing.h>
#endif

#include "lwload/error.hpp"
#include "lwload/io_engine.hpp"

namespace lwload {
namespace {

// Each engine's name, listed once: what io_engine_name() prints is what parse_io_engine() accepts.
constexpr std::pair<IoEngine, std::string_view> kEngineNames[] = {
    {IoEngine::auto_, "auto"},
    {IoEngine::io_uring, "io_uring"},
    {IoEngine::pread, "pread"},
};

}  // namespace

std::string_view io_engine_name(IoEngine engine) noexcept {
  for (const auto& [value, name] : kEngineNames)
    if (value == engine) return name;
  return "?";
}

IoEngine parse_io_engine(std::string_view text) {
  if (text.empty()) return IoEngine::auto_;
  if (text == "io-uring" || text == "uring") return IoEngine::io_uring;  // spellings people type
  for (const auto& [value, name] : kEngineNames)
    if (name == text) return value;
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
