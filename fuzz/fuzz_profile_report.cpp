// libFuzzer harness for profile::report_from_json, the parser `lwload profile --compare` reads its
// children's reports with. Any lwload::Error is a correct rejection; anything else (a crash, a
// sanitizer report, another exception type escaping) is a bug.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "lwload/error.hpp"
#include "lwload/profile.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const auto report = lwload::profile::report_from_json(std::string_view(reinterpret_cast<const char*>(data), size));
    (void)report;
  } catch (const lwload::Error&) {
  }
  return 0;
}
