// The safetensors wing alone: its reader reads every safetensors model of the test data and refuses another format's.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include "formats/safetensors/safetensors.hpp"
#include "wings/wing_check.hpp"

using namespace lwload;

TEST_CASE("safetensors wing: its reader alone reads the test models and refuses another format's") {
  const auto fs = posix_file_system();
  std::size_t tensors = 0;
  for (const auto& entry : std::filesystem::directory_iterator(test::wing_testdata() / "safetensors"))
    if (entry.path().extension() == ".safetensors")
      tensors += test::check_reads(formats::safetensors_reader, *fs, entry.path());
  CHECK(tensors > 0);
  test::check_refuses(formats::safetensors_reader, *fs, test::wing_testdata() / "gguf/tiny-llama-f32-f16-q8.gguf");
}
