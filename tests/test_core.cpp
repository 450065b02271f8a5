// Core vocabulary: dtype sizes (plain, sub-byte, ggml blocks), overflow checks, path containment,
// the header reader's bounds checks and the file seam.
#include <doctest/doctest.h>

#include <cstring>
#include <limits>

#include "formats/format.hpp"
#include "formats/header_reader.hpp"
#include "lwload/dtype.hpp"
#include "lwload/error.hpp"
#include "lwload/file_system.hpp"
#include "support/test_support.hpp"

using namespace lwload;

TEST_CASE("dtype names round-trip and sizes follow their layouts") {
  for (DType t :
       {DType::F32, DType::BF16, DType::I4, DType::Q4_K, DType::MXFP4, DType::NVFP4, DType::Q2_0, DType::STRING})
    CHECK(dtype_from_name(dtype_name(t)) == t);
  CHECK_FALSE(dtype_from_name("F33"));
  CHECK(dtype_bytes(DType::F32, 6) == 24u);
  CHECK(dtype_bytes(DType::I4, 3) == 2u);        // two per byte, the last half byte rounds up
  CHECK(dtype_bytes(DType::Q8_0, 64) == 68u);    // 2 blocks of 34 bytes
  CHECK(dtype_bytes(DType::Q4_K, 512) == 288u);  // 2 blocks of 144 bytes
  CHECK_FALSE(dtype_bytes(DType::Q8_0, 33));     // not a whole block
  CHECK_FALSE(dtype_bytes(DType::STRING, 1));
  CHECK_FALSE(dtype_bytes(DType::F64, std::numeric_limits<std::uint64_t>::max() / 4));
}

TEST_CASE("element counts reject negative dimensions and overflow") {
  const std::int64_t ok[] = {2, 3, 4};
  const std::int64_t negative[] = {2, -1};
  const std::int64_t huge[] = {std::int64_t{1} << 40, std::int64_t{1} << 40};
  CHECK(element_count(ok) == 24u);
  CHECK_FALSE(element_count(negative));
  CHECK_FALSE(element_count(huge));
}

TEST_CASE("ggml type ids map to canonical dtypes; retired ids are rejected") {
  CHECK(dtype_from_ggml(0) == DType::F32);
  CHECK(dtype_from_ggml(8) == DType::Q8_0);
  CHECK(dtype_from_ggml(30) == DType::BF16);
  CHECK(dtype_from_ggml(39) == DType::MXFP4);
  CHECK(dtype_from_ggml(40) == DType::NVFP4);
  CHECK(dtype_from_ggml(41) == DType::Q1_0);
  CHECK(dtype_from_ggml(42) == DType::Q2_0);
  CHECK_FALSE(dtype_from_ggml(43));
  CHECK_FALSE(dtype_from_ggml(4));
  CHECK_FALSE(dtype_from_ggml(1000));
}

TEST_CASE("offset + length overflow and out-of-file extents are bad input naming the file") {
  try {
    formats::check_extent("m.bin", "tensor 'w'", std::numeric_limits<std::uint64_t>::max() - 1, 8, 100);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::bad_input);
    CHECK(std::string(e.what()).find("overflows 64 bits") != std::string::npos);
    CHECK(std::string(e.what()).find("m.bin") != std::string::npos);
  }
  CHECK_THROWS_WITH_AS(formats::check_extent("m.bin", "tensor 'w'", 90, 20, 100),
                       doctest::Contains("past the end of the file (100 bytes)"), Error);
  CHECK_NOTHROW(formats::check_extent("m.bin", "tensor 'w'", 80, 20, 100));
}

TEST_CASE("paths named inside a model may not escape its folder") {
  CHECK(formats::resolve_inside("/m", "data/w.bin", "/m/model.onnx", "location") == "/m/data/w.bin");
  CHECK_THROWS_WITH_AS(formats::resolve_inside("/m", "../etc/passwd", "/m/model.onnx", "location"),
                       doctest::Contains("escapes the model folder"), Error);
  CHECK_THROWS_WITH_AS(formats::resolve_inside("/m", "a/../../x", "/m/model.onnx", "location"),
                       doctest::Contains("escapes the model folder"), Error);
  CHECK_THROWS_AS(formats::resolve_inside("/m", "/etc/passwd", "/m/model.onnx", "location"), Error);
}

TEST_CASE("header reader reads little-endian fields and reports truncation with the offset") {
  test::TempDir dir;
  std::vector<std::byte> bytes;
  test::put_u32(bytes, 0x46554747);
  test::put_u64(bytes, 300);
  test::put_u8(bytes, 0xac);  // varint 300 = 0xac 0x02
  test::put_u8(bytes, 0x02);
  test::write_file(dir / "h.bin", bytes);
  const auto file = posix_file_system()->open(dir / "h.bin");
  formats::HeaderReader reader(*file);
  CHECK(reader.u32("magic") == 0x46554747u);
  CHECK(reader.u64("count") == 300u);
  CHECK(reader.varint("tag") == 300u);
  CHECK(reader.at_end());
  CHECK_THROWS_WITH_AS(reader.u8("next"), doctest::Contains("next at offset 14"), Error);
  reader.seek(4, "count");
  CHECK_THROWS_WITH_AS(reader.string(1u << 30, "name"), doctest::Contains("only 10 remain"), Error);
}

TEST_CASE("opening a missing file is an io error naming it") {
  CHECK_THROWS_WITH_AS(posix_file_system()->open("/nonexistent/model.gguf"),
                       doctest::Contains("/nonexistent/model.gguf"), Error);
}

#include "synth/synth.hpp"

TEST_CASE("synthetic safetensors: aligned layout pads the header and sizes, contents are deterministic") {
  test::TempDir dir;
  synth::SynthSpec spec;
  spec.total_bytes = 64 * 1024;
  spec.tensor_count = 4;
  spec.alignment = 4096;
  synth::write_model(dir / "a.safetensors", spec);
  const auto bytes = test::read_file(dir / "a.safetensors");
  std::uint64_t header = 0;
  std::memcpy(&header, bytes.data(), 8);
  CHECK((8 + header) % 4096 == 0);
  CHECK(bytes.size() == 8 + header + 64 * 1024);
  std::vector<std::byte> expect(100);
  synth::expected_bytes(spec.seed, 2, 10, expect);
  CHECK(std::memcmp(bytes.data() + 8 + header + 2 * 16384 + 10, expect.data(), expect.size()) == 0);
  std::vector<std::byte> other(100);
  synth::expected_bytes(spec.seed + 1, 2, 10, other);
  CHECK(expect != other);
}

#include <cstdlib>

#include "lwload/version.hpp"

TEST_CASE("the version: the macro, the linked library and `lwload --version` agree") {
  const std::string macro = LWLOAD_VERSION;
  CHECK(std::string(lwload::version()) == macro);
  CHECK(macro == std::to_string(LWLOAD_VERSION_MAJOR) + "." + std::to_string(LWLOAD_VERSION_MINOR) + "." +
                     std::to_string(LWLOAD_VERSION_PATCH));
  const char* exe = std::getenv("LWLOAD_EXE");
  if (!exe) {
    (void)lwload::test::have_exe();  // reports the skip; a failure under LWLOAD_REQUIRE=exe
    return;
  }
  std::string out;
  REQUIRE(lwload::test::run_command(std::string(exe) + " --version", &out) == 0);
  CHECK(out == "lwload " + macro + "\n");
}

#include <boost/json.hpp>

#include "lwload/manifest_json.hpp"

TEST_CASE("manifest JSON: a name holding quotes, backslashes and control bytes reads back as itself") {
  // Names are a file's bytes: every character JSON must escape, and the escapes' own spelling.
  const std::string name =
      "a\"b\\c\\u0041\nd\te\x01\x1f"
      "f/g\x7f";
  Manifest m;
  m.format = "safetensors";
  m.files = {"dir\\with \"quotes\".safetensors"};
  TensorInfo t;
  t.name = name;
  t.dtype = DType::F32;
  t.shape = {1};
  t.bytes = 4;
  t.pieces = {Piece{0, 0, 4}};
  m.tensors.push_back(t);
  const std::string json = manifest_to_json(m);
  CAPTURE(json);
  boost::system::error_code ec;
  const boost::json::value parsed = boost::json::parse(json, ec);
  REQUIRE_FALSE(ec);
  CHECK(parsed.at("tensors").at(0).at("name").as_string() == name);
  CHECK(parsed.at("files").at(0).as_string() == m.files[0].string());
}

#include <span>
#include <vector>

#include "lwload/manifest.hpp"

TEST_CASE("InlineVector: inline up to N, on the heap past it, and a vector in every other way") {
  using lwload::InlineVector;
  InlineVector<std::int64_t, 4> v;
  CHECK(v.empty());
  CHECK(v.capacity() == 4);
  const std::int64_t* inline_data = v.data();
  for (std::int64_t i = 0; i < 4; ++i) v.push_back(i);
  CHECK(v.data() == inline_data);  // still inside the object
  v.push_back(v[0]);               // grows while the value is one of its own elements
  CHECK(v.data() != inline_data);
  CHECK(v.capacity() >= 5);
  CHECK(v == std::vector<std::int64_t>{0, 1, 2, 3, 0});
  CHECK(std::vector<std::int64_t>{0, 1, 2, 3, 0} == v);

  // Copies and moves, inline and on the heap, leave each side whole.
  InlineVector<std::int64_t, 4> copy = v;
  CHECK(copy == v);
  InlineVector<std::int64_t, 4> moved = std::move(copy);
  CHECK(moved == v);
  CHECK(copy.empty());  // NOLINT(bugprone-use-after-move): a moved-from InlineVector is empty
  InlineVector<std::int64_t, 4> small{7, 8};
  InlineVector<std::int64_t, 4> small_moved = std::move(small);
  CHECK(small_moved == std::vector<std::int64_t>{7, 8});
  small_moved = moved;  // an inline one takes a heap one's elements
  CHECK(small_moved == v);
  moved = {9};  // a heap one takes an inline list
  CHECK(moved == std::vector<std::int64_t>{9});
  CHECK(moved.at(0) == 9);
  CHECK_THROWS_AS((void)moved.at(1), std::out_of_range);

  // What readers and consumers do with a shape: a span, a std::vector, assign, resize.
  const std::span<const std::int64_t> span = v;
  CHECK(span.size() == 5);
  CHECK(span[4] == 0);
  const std::vector<std::int64_t> as_vector = v;
  CHECK(as_vector.size() == 5);
  v.assign(as_vector.begin(), as_vector.begin() + 2);
  CHECK(v == std::vector<std::int64_t>{0, 1});
  v.resize(3, 6);
  CHECK(v == std::vector<std::int64_t>{0, 1, 6});
  v.clear();
  CHECK(v.empty());

  // A tensor in one piece keeps it in the record.
  lwload::Pieces pieces;
  pieces.push_back(lwload::Piece{1, 64, 128});
  CHECK(pieces.capacity() == 1);
  pieces.emplace_back(2u, std::uint64_t{0}, std::uint64_t{8});
  CHECK(pieces.size() == 2);
  CHECK(pieces.front().file == 1);
  CHECK(pieces.back().length == 8);
}
