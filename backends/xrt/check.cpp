// XRT's exceptions as lwload errors (see check.hpp).
#include "backends/xrt/check.hpp"

#include <cerrno>
#include <new>
#include <system_error>

#include "lwload/error.hpp"

namespace lwload::xrt_backend {

std::string what_of(const std::exception& e) {
  std::string text = e.what();
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

void fail_call(const std::exception& e, std::string_view who, std::string_view call, std::string_view what) {
  bool memory = dynamic_cast<const std::bad_alloc*>(&e) != nullptr;
  if (const auto* system = dynamic_cast<const std::system_error*>(&e)) memory = system->code().value() == ENOMEM;
  const auto code = memory ? ErrorCode::out_of_memory : ErrorCode::device;
  if (what.empty()) fail(code, who, ": ", call, " failed: ", what_of(e));
  fail(code, who, ": ", call, " (", what, ") failed: ", what_of(e));
}

}  // namespace lwload::xrt_backend
