// Names of error codes, for messages and the CLI's --json output.
#include "lwload/error.hpp"

namespace lwload {

std::string_view error_code_name(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::bad_input: return "bad_input";
    case ErrorCode::io: return "io";
    case ErrorCode::device: return "device";
    case ErrorCode::out_of_memory: return "out_of_memory";
    case ErrorCode::does_not_fit: return "does_not_fit";
    case ErrorCode::cancelled: return "cancelled";
    case ErrorCode::usage: return "usage";
    case ErrorCode::unsupported: return "unsupported";
  }
  return "unknown";
}

}  // namespace lwload
