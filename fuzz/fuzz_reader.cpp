// libFuzzer harness for one format reader (LWLOAD_FUZZ_FORMAT names it): the input is the model
// file, held in a MemoryFileSystem; any lwload::Error is a correct rejection, anything else
// (a crash, a sanitizer report, another exception type) is a bug.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "lwload/error.hpp"
#include "lwload/manifest.hpp"
#include "lwload/memory_file_system.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto fs = std::make_shared<lwload::MemoryFileSystem>();
  const auto* begin = reinterpret_cast<const std::byte*>(data);
  fs->add_file(LWLOAD_FUZZ_FILE, std::vector<std::byte>(begin, begin + size));
  lwload::OpenOptions options;
  options.file_system = fs;
  options.format = LWLOAD_FUZZ_FORMAT;
  try {
    const lwload::Manifest manifest = lwload::open_manifest(LWLOAD_FUZZ_FILE, options);
    (void)manifest.total_bytes();
  } catch (const lwload::Error&) {
  }
  return 0;
}
