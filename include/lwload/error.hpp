// lwload reports every failure by throwing lwload::Error (one mechanism across the library, the C++
// way for a library whose failures are rare and must unwind RAII allocations). The code says what
// kind of failure it is so callers (and the CLI's exit status) can react; the message names the
// file, tensor and field and the offending value.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include "lwload/export.h"

namespace lwload {

enum class ErrorCode {
  bad_input,      // the model file is malformed, truncated or inconsistent
  io,             // the operating system refused a read, open or map
  device,         // a backend or driver call failed
  out_of_memory,  // an allocation failed (host or device)
  does_not_fit,   // the plan does not fit the device or the budget; nothing was allocated
  cancelled,      // the caller cancelled the load
  usage,          // the caller asked for something invalid (unknown device, bad option)
  unsupported,    // valid input lwload cannot handle (yet)
};

LWLOAD_API std::string_view error_code_name(ErrorCode code) noexcept;

class LWLOAD_API Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

// Builds a message from streamable parts: str("tensor '", name, "': offset ", off).
template <typename... Parts>
std::string str(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}

template <typename... Parts>
[[noreturn]] void fail(ErrorCode code, const Parts&... parts) {
  throw Error(code, str(parts...));
}

}  // namespace lwload
