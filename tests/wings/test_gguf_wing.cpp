// The gguf wing alone: its reader reads every gguf model of the test data and refuses another format's.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include "formats/gguf/gguf.hpp"
#include "wings/wing_check.hpp"

using namespace lwload;

TEST_CASE("gguf wing: its reader alone reads the test models and refuses another format's") {
  const auto fs = posix_file_system();
  std::size_t tensors = 0;
  for (const auto& entry : std::filesystem::directory_iterator(test::wing_testdata() / "gguf"))
    if (entry.path().extension() == ".gguf") tensors += test::check_reads(formats::gguf_reader, *fs, entry.path());
  CHECK(tensors > 0);
  test::check_refuses(formats::gguf_reader, *fs, test::wing_testdata() / "safetensors/b.safetensors");
}
