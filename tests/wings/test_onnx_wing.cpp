// The ONNX wing alone: its reader reads the test models (weights inline and in an external file)
// and refuses another format's.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include "formats/onnx/onnx.hpp"
#include "wings/wing_check.hpp"

using namespace lwload;

TEST_CASE("onnx wing: its reader alone reads the test models and refuses another format's") {
  const auto fs = posix_file_system();
  const auto data = test::wing_testdata();
  CHECK(test::check_reads(formats::onnx_reader, *fs, data / "onnx" / "mlp_inline.onnx") > 0);
  CHECK(test::check_reads(formats::onnx_reader, *fs, data / "onnx" / "mlp_external" / "model.onnx") > 0);
  test::check_refuses(formats::onnx_reader, *fs, data / "gguf" / "tiny-llama-f32-f16-q8.gguf");
}
