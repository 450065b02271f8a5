// The TFJS wing alone: its reader reads every TFJS model folder of the test data and refuses another
// format's.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include "formats/tfjs/tfjs.hpp"
#include "wings/wing_check.hpp"

using namespace lwload;

TEST_CASE("tfjs wing: its reader alone reads the test models and refuses another format's") {
  const auto fs = posix_file_system();
  std::size_t tensors = 0;
  for (const auto& entry : std::filesystem::directory_iterator(test::wing_testdata() / "tfjs"))
    tensors += test::check_reads(formats::tfjs_reader, *fs, entry.path());
  CHECK(tensors > 0);
  test::check_refuses(formats::tfjs_reader, *fs, test::wing_testdata() / "safetensors" / "b.safetensors");
}
