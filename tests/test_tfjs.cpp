// TFJS reader: the converter's samples (expected offsets computed independently from the manifest
// JSON here, tensor bytes compared with the concatenated shards), generated models with a tensor
// spanning three shards and string weights, headers-only reading, and every malformed-input class.
#include <doctest/doctest.h>

#include <boost/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "lwload/error.hpp"
#include "lwload/manifest.hpp"
#include "lwload/memory_file_system.hpp"
#include "support/test_support.hpp"

using namespace lwload;
using namespace lwload::test;
namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

std::vector<std::byte> tensor_data(const Manifest& m, const TensorInfo& t) {
  std::vector<std::byte> out;
  for (const Piece& p : t.pieces) {
    const auto part = read_range(m.files.at(p.file), p.offset, p.length);
    out.insert(out.end(), part.begin(), part.end());
  }
  return out;
}

// Bytes per element of what tfjs stores, from the manifest entry (the test's own table).
std::uint64_t stored_element_bytes(const json::object& weight) {
  if (const auto* q = weight.if_contains("quantization")) {
    const auto d = q->at("dtype").as_string();
    return d == "uint8" ? 1 : 2;
  }
  const auto d = weight.at("dtype").as_string();
  if (d == "bool") return 1;
  if (d == "complex64") return 8;
  return 4;  // float32, int32
}

// Checks a converter-written manifest against the reader: names, shapes, dtypes, and that every
// tensor's pieces hold exactly the bytes at the independently computed offset of its group stream.
void check_against_manifest(const fs::path& manifest_file, const json::array& groups, const Manifest& m) {
  const fs::path dir = manifest_file.parent_path();
  std::size_t tensor = 0;
  for (const auto& group_value : groups) {
    const auto& group = group_value.as_object();
    std::vector<std::byte> stream;
    for (const auto& p : group.at("paths").as_array()) {
      const auto bytes = read_file(dir / std::string(p.as_string()));
      stream.insert(stream.end(), bytes.begin(), bytes.end());
    }
    std::uint64_t offset = 0;
    for (const auto& weight_value : group.at("weights").as_array()) {
      const auto& weight = weight_value.as_object();
      REQUIRE(tensor < m.tensors.size());
      const TensorInfo& t = m.tensors[tensor++];
      CAPTURE(t.name);
      CHECK(t.name == std::string_view(weight.at("name").as_string()));
      std::uint64_t elements = 1;
      std::vector<std::int64_t> shape;
      for (const auto& d : weight.at("shape").as_array()) {
        shape.push_back(d.to_number<std::int64_t>());
        elements *= d.to_number<std::uint64_t>();
      }
      CHECK(t.shape == shape);
      const std::uint64_t bytes = elements * stored_element_bytes(weight);
      CHECK(t.bytes == bytes);
      REQUIRE(offset + bytes <= stream.size());
      CHECK(tensor_data(m, t) == slice(stream, offset, bytes));
      offset += bytes;
    }
  }
  CHECK(tensor == m.tensors.size());
}

struct WorkingDirectory {
  explicit WorkingDirectory(const fs::path& dir) : saved(fs::current_path()) { fs::current_path(dir); }
  ~WorkingDirectory() { fs::current_path(saved); }
  fs::path saved;
};

std::string bad_input_message(const fs::path& path) {
  try {
    open_manifest(path);
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::bad_input);
    return e.what();
  }
  FAIL("no error for malformed input");
  return {};
}

}  // namespace

TEST_CASE("graph and layers models (model.json): tensors and bytes match the manifest") {
  for (const char* name : {"graph_model", "layers_model"}) {
    CAPTURE(name);
    const fs::path model_json = testdata() / "tfjs" / name / "model.json";
    const auto doc = json::parse(
        std::string(reinterpret_cast<const char*>(read_file(model_json).data()), read_file(model_json).size()));
    for (const fs::path& input : {model_json, model_json.parent_path()}) {  // the file or its folder
      const Manifest m = open_manifest(input);
      CHECK(m.format == "tfjs");
      REQUIRE(m.files.size() == 1);
      CHECK(m.files[0] == model_json.parent_path() / "weights.bin");
      for (const auto& t : m.tensors) {
        CHECK(t.dtype == DType::F32);
        CHECK_FALSE(t.quantization);
      }
      check_against_manifest(model_json, doc.at("weightsManifest").as_array(), m);
    }
  }
  // Known values: graph_model's 2x2 float32 'w' starts 0x3c8e5900 (0.01737...).
  const Manifest m = open_manifest(testdata() / "tfjs" / "graph_model");
  REQUIRE(m.tensors.size() == 1);
  const auto data = tensor_data(m, m.tensors[0]);
  float first;
  std::memcpy(&first, data.data(), 4);
  CHECK(first == doctest::Approx(0.017376).epsilon(1e-4));
  CHECK(open_manifest(testdata() / "tfjs" / "layers_model").tensors.size() == 4);
}

TEST_CASE("sharded, quantized bare weights_manifest.json: pieces across shards, quantization kept") {
  const fs::path manifest_file = testdata() / "tfjs" / "sharded_quantized" / "weights_manifest.json";
  const auto raw = read_file(manifest_file);
  const auto groups = json::parse(std::string(reinterpret_cast<const char*>(raw.data()), raw.size())).as_array();
  const Manifest m = open_manifest(manifest_file);
  CHECK(m.format == "tfjs");
  REQUIRE(m.files.size() == 6);
  CHECK(m.files[0] == manifest_file.parent_path() / "group1-shard1of5.bin");
  CHECK(m.files[5] == manifest_file.parent_path() / "group2-shard1of1.bin");
  check_against_manifest(manifest_file, groups, m);

  const TensorInfo* kernel = m.find("dense/kernel");
  REQUIRE(kernel);
  CHECK(kernel->dtype == DType::F32);
  REQUIRE(kernel->pieces.size() == 4);  // 240,000 bytes over 64 KiB shards
  CHECK(kernel->pieces[0].file == 0);
  CHECK(kernel->pieces[0].offset == 0);
  CHECK(kernel->pieces[0].length == 65536);
  CHECK(kernel->pieces[3].file == 3);
  CHECK(kernel->pieces[3].length == 240000 - 3 * 65536);

  const TensorInfo* table = m.find("embed/table");
  REQUIRE(table);
  CHECK(table->dtype == DType::U8);  // what is stored
  CHECK(table->bytes == 32000);
  REQUIRE(table->quantization);
  CHECK(table->quantization->scheme == "tfjs");
  REQUIRE(table->quantization->scale.size() == 1);
  CHECK(table->quantization->scale[0] == doctest::Approx(0.0318300163044649));
  CHECK(table->quantization->min.value() == doctest::Approx(-3.9469220217536476));
  CHECK(table->quantization->original_dtype == DType::F32);
  CHECK(table->pieces.size() == 2);  // starts at 240,800 in shard 4, crosses into shard 5

  const TensorInfo* head = m.find("head/kernel");
  REQUIRE(head);
  CHECK(head->dtype == DType::F16);
  CHECK(head->bytes == 4000);
  REQUIRE(head->quantization);
  CHECK(head->quantization->scale.empty());
  CHECK_FALSE(head->quantization->min);
  CHECK(head->pieces.at(0).file == 5);

  CHECK(m.find("counts")->dtype == DType::I32);
  const TensorInfo* mask = m.find("mask");
  CHECK(mask->dtype == DType::BOOL);
  for (std::byte b : tensor_data(m, *mask)) CHECK(std::to_integer<int>(b) <= 1);

  // The folder form finds weights_manifest.json.
  CHECK(open_manifest(manifest_file.parent_path()).tensors.size() == m.tensors.size());
}

TEST_CASE("generated: a tensor spanning three shards, string weights, relative paths") {
  TempDir dir;
  const auto stream = counting_bytes(30, 7);
  write_file(dir / "s1.bin", slice(stream, 0, 10));
  fs::create_directories(dir / "sub");
  write_file(dir / "sub" / "s2.bin", slice(stream, 10, 10));
  write_file(dir / "s3.bin", slice(stream, 20, 10));
  write_file(dir / "model.json", R"({"format":"graph-model","generatedBy":"test","weightsManifest":[
    {"paths":["s1.bin","sub/s2.bin","./s3.bin"],"weights":[
      {"name":"first","shape":[],"dtype":"int32"},
      {"name":"spanning","shape":[2,3],"dtype":"float32"},
      {"name":"flags","shape":[2],"dtype":"bool"}]}]})");
  const Manifest m = open_manifest(dir / "model.json");
  REQUIRE(m.tensors.size() == 3);
  const TensorInfo& span = m.tensors[1];
  REQUIRE(span.pieces.size() == 3);
  CHECK(span.pieces[0].file == 0);
  CHECK(span.pieces[0].offset == 4);
  CHECK(span.pieces[0].length == 6);
  CHECK(span.pieces[1].file == 1);
  CHECK(span.pieces[1].offset == 0);
  CHECK(span.pieces[1].length == 10);
  CHECK(span.pieces[2].file == 2);
  CHECK(span.pieces[2].offset == 0);
  CHECK(span.pieces[2].length == 8);
  CHECK(m.files[1] == dir / "sub" / "s2.bin");
  CHECK(tensor_data(m, span) == slice(stream, 4, 24));
  CHECK(tensor_data(m, m.tensors[2]) == slice(stream, 28, 2));
  CHECK(m.tensors[0].shape.empty());
  CHECK(m.tensors[0].bytes == 4);
  CHECK(m.metadata.size() == 2);

  {  // relative input → relative shard paths
    WorkingDirectory cwd(dir.path());
    const Manifest rel = open_manifest("model.json");
    CHECK(rel.files.at(1) == fs::path("sub/s2.bin"));
  }

  // String weights: (u32 LE length, bytes) per element. "ab","cde" then a float; the first
  // string's prefix is split across the shard boundary; the last weight is a string taking the rest.
  std::vector<std::byte> strings;
  put_u8(strings, 1);  // bool[2]
  put_u8(strings, 0);
  put_u32(strings, 2);
  put_bytes(strings, "ab");
  put_u32(strings, 3);
  put_bytes(strings, "cde");
  put_u32(strings, 0x40490fdb);  // float32 pi
  put_u32(strings, 1);
  put_bytes(strings, "z");
  put_u32(strings, 0);
  write_file(dir / "t1.bin", slice(strings, 0, 4));
  write_file(dir / "t2.bin", slice(strings, 4, strings.size() - 4));
  write_file(dir / "strings.json", R"([{"paths":["t1.bin","t2.bin"],"weights":[
      {"name":"flags","shape":[2],"dtype":"bool"},
      {"name":"words","shape":[2],"dtype":"string"},
      {"name":"pi","shape":[1],"dtype":"float32"},
      {"name":"tail","shape":[2],"dtype":"string"}]}])");
  const Manifest s = open_manifest(dir / "strings.json");
  REQUIRE(s.tensors.size() == 4);
  const TensorInfo& words = s.tensors[1];
  CHECK(words.dtype == DType::STRING);
  CHECK(words.bytes == 4 + 2 + 4 + 3);
  CHECK(tensor_data(s, words) == slice(strings, 2, 13));
  CHECK(words.pieces.size() == 2);
  const auto pi = tensor_data(s, s.tensors[2]);
  float value;
  std::memcpy(&value, pi.data(), 4);
  CHECK(value == doctest::Approx(3.14159265f));
  CHECK(s.tensors[3].bytes == strings.size() - 19);  // the last weight: the rest of the stream
}

TEST_CASE("opening reads the manifest only: shard reads would fail") {
  auto fs = std::make_shared<MemoryFileSystem>();
  fs->add_directory("m");
  fs->add_file("m/model.json", [] {
    std::vector<std::byte> v;
    put_bytes(
        v,
        R"({"weightsManifest":[{"paths":["a.bin","b.bin"],"weights":[{"name":"w","shape":[4,4],"dtype":"float32"}]}]})");
    return v;
  }());
  fs->add_file("m/a.bin", counting_bytes(40));
  fs->add_file("m/b.bin", counting_bytes(24));
  fs->fail_reads_from("m/a.bin", 0);
  fs->fail_reads_from("m/b.bin", 0);
  OpenOptions options;
  options.file_system = fs;
  const Manifest m = open_manifest("m", options);
  REQUIRE(m.tensors.size() == 1);
  REQUIRE(m.tensors[0].pieces.size() == 2);
  CHECK(m.tensors[0].pieces[1].length == 24);
}

TEST_CASE("malformed TFJS manifests: bad_input naming file, tensor, field and value") {
  TempDir dir;
  write_file(dir / "w.bin", counting_bytes(16));
  auto message = [&](const std::string& manifest) {
    write_file(dir / "model.json", manifest);
    return bad_input_message(dir / "model.json");
  };
  auto group = [](const std::string& paths, const std::string& weights) {
    return R"({"weightsManifest":[{"paths":[)" + paths + R"(],"weights":[)" + weights + "]}]}";
  };

  std::string msg = message(group(R"("w.bin","missing.bin")", R"({"name":"w","shape":[4],"dtype":"float32"})"));
  CHECK(msg.find("model.json") != std::string::npos);
  CHECK(msg.find("weightsManifest[0] paths[1]: shard 'missing.bin' (holding tensor 'w') is missing") !=
        std::string::npos);

  msg = message(group(R"("../w.bin")", R"({"name":"w","shape":[4],"dtype":"float32"})"));
  CHECK(msg.find("'../w.bin' escapes the model folder") != std::string::npos);

  msg = message(group(R"("w.bin")",
                      R"({"name":"a","shape":[2],"dtype":"float32"},{"name":"big","shape":[3],"dtype":"float32"})"));
  CHECK(msg.find("tensor 'big' (weightsManifest[0].weights[1]): needs bytes [8, 20) of the group's byte stream, but "
                 "its shards hold only 16 bytes") != std::string::npos);

  msg = message(group(R"("w.bin")", R"({"name":"w","shape":[4],"dtype":"float64"})"));
  CHECK(msg.find("tensor 'w' (weightsManifest[0].weights[0]): unknown dtype 'float64'") != std::string::npos);

  msg = message(group(R"("w.bin")", R"({"name":"w","shape":[4],"dtype":"float32","quantization":{"dtype":"int4"}})"));
  CHECK(msg.find("unknown quantization dtype 'int4'") != std::string::npos);

  msg = message(group(R"("w.bin")",
                      R"({"name":"w","shape":[4],"dtype":"float32","quantization":{"dtype":"uint8","scale":0.5}})"));
  CHECK(msg.find("tensor 'w'") != std::string::npos);
  CHECK(msg.find("uint8 quantization needs 'scale' and 'min'") != std::string::npos);

  msg = message(group(R"("w.bin")", R"({"name":"w","shape":[4,-1],"dtype":"float32"})"));
  CHECK(msg.find("field 'shape': expected a non-negative integer below 2^64, found -1") != std::string::npos);

  msg = message(group(R"("w.bin")", R"({"name":"w","shape":[4294967296,4294967296],"dtype":"float32"})"));
  CHECK(msg.find("tensor 'w'") != std::string::npos);
  CHECK(msg.find("overflow") != std::string::npos);

  msg = message(
      group(R"("w.bin")", R"({"name":"w","shape":[1],"dtype":"float32"},{"name":"w","shape":[1],"dtype":"float32"})"));
  CHECK(msg.find("tensor 'w' (weightsManifest[0].weights[1]): a weight of this name appears earlier") !=
        std::string::npos);

  msg = message(group(R"("w.bin")", R"({"shape":[1],"dtype":"float32"})"));
  CHECK(msg.find("weightsManifest[0].weights[0]: missing field 'name'") != std::string::npos);

  msg = message(R"({"weightsManifest":[{"paths":["w.bin"],"weights":[{"name":"w",}]}]})");
  CHECK(msg.find("manifest: malformed JSON at byte 62 of the file: syntax error") != std::string::npos);

  msg = message(R"({"modelTopology":{}})");
  CHECK(msg.find("missing field 'weightsManifest'") != std::string::npos);

  // A string weight whose length prefix points past the stream (not the last weight: walked).
  std::vector<std::byte> bad_strings;
  put_u32(bad_strings, 1000);
  put_bytes(bad_strings, "abcd");
  write_file(dir / "s.bin", bad_strings);
  msg = message(
      group(R"("s.bin")", R"({"name":"s","shape":[1],"dtype":"string"},{"name":"x","shape":[0],"dtype":"float32"})"));
  CHECK(msg.find("tensor 's' (weightsManifest[0].weights[0]): string 0 of 1000 bytes at stream offset 4 extends past "
                 "the end") != std::string::npos);
  // More strings than the stream could hold even empty.
  msg = message(group(R"("s.bin")", R"({"name":"s","shape":[3],"dtype":"string"})"));
  CHECK(msg.find("3 strings need at least 4 bytes each but only 8 bytes") != std::string::npos);
}

TEST_CASE("string weights walking a shard listed again share one budget: the shard files' bytes, all walks together") {
  // s.bin holds ten strings of 6 bytes (10 bytes each with their length prefix) and is listed
  // three times: a 300-byte stream from 100 bytes of file. Each string weight but the last walks
  // its length prefixes; the walks together may read no more than the 100 bytes the files hold.
  TempDir dir;
  std::vector<std::byte> strings;
  for (int i = 0; i < 10; ++i) {
    put_u32(strings, 6);
    put_bytes(strings, "abcdef");
  }
  write_file(dir / "s.bin", strings);
  auto manifest = [](int first, int second) {
    return R"({"weightsManifest":[{"paths":["s.bin","s.bin","s.bin"],"weights":[)"
           R"({"name":"a","shape":[)" +
           std::to_string(first) +
           R"(],"dtype":"string"},)"
           R"({"name":"b","shape":[)" +
           std::to_string(second) +
           R"(],"dtype":"string"},)"
           R"({"name":"rest","shape":[1],"dtype":"string"}]}]})";
  };
  // 40 + 50 bytes walked: within the budget, and each weight is its strings.
  write_file(dir / "model.json", manifest(4, 5));
  const Manifest m = open_manifest(dir / "model.json");
  REQUIRE(m.tensors.size() == 3);
  CHECK(m.tensors[0].bytes == 40);
  CHECK(m.tensors[1].bytes == 50);
  // 60 + 60: each walk alone is within the 100 bytes, together they are not.
  write_file(dir / "model.json", manifest(6, 6));
  const std::string msg = bad_input_message(dir / "model.json");
  CHECK_MESSAGE(msg.find("tensor 'b' (weightsManifest[0].weights[1])") != std::string::npos, msg);
  CHECK_MESSAGE(msg.find("span more than 100 bytes, all the shard files named hold") != std::string::npos, msg);
}

TEST_CASE("lwload inspect --json on a TFJS model reports pieces and quantization") {
  std::string out;
  REQUIRE(run_lwload("inspect --json '" + (testdata() / "tfjs" / "sharded_quantized").string() + "'", &out) == 0);
  const auto root = json::parse(out).as_object();
  CHECK(root.at("format").as_string() == "tfjs");
  CHECK(root.at("files").as_array().size() == 6);
  const auto& tensors = root.at("tensors").as_array();
  REQUIRE(tensors.size() == 7);
  const auto& table = tensors[2].as_object();
  CHECK(table.at("name").as_string() == "embed/table");
  CHECK(table.at("dtype").as_string() == "U8");
  const auto& quantization = root.at("quantizations").as_array().at(table.at("quantization").to_number<std::size_t>());
  CHECK(quantization.at("scheme").as_string() == "tfjs");
  CHECK(quantization.at("original_dtype").as_string() == "F32");
  CHECK(table.at("pieces").as_array().size() == 2);

  TempDir dir;
  write_file(dir / "model.json", R"({"weightsManifest":[{"paths":["nope.bin"],"weights":[]}]})");
  CHECK(run_lwload("inspect --json '" + (dir / "model.json").string() + "'", &out) == 3);
}

TEST_CASE("quantization numbers are the doubles their text denotes (correctly rounded, as tfjs reads them)") {
  // The first is face-api's; Boost.JSON 1.81's own conversion gives 0x1.7c1608888888ap-6 (1 ulp low).
  const std::vector<std::pair<std::string, double>> numbers{{"0.023198612531026206", 0x1.7c16088888889p-6},
                                                            {"1.0000000000000002", 0x1.0000000000001p+0},
                                                            {"5e-324", 0x0.0000000000001p-1022},
                                                            {"2.2250738585072011e-308", 0x0.fffffffffffffp-1022},
                                                            {"123456789012345678901234567890", 0x1.8ee90ff6c373ep+96},
                                                            {"0.1", 0.1}};
  // And random doubles written with 17 significant digits (%.17g) come back bit for bit.
  std::vector<std::pair<std::string, double>> all = numbers;
  std::uint64_t state = 42;
  for (int i = 0; i < 200; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    double value;
    std::uint64_t bits = (state >> 2) & 0x3fffffffffffffffull;  // finite, positive
    std::memcpy(&value, &bits, sizeof value);
    char text[40];
    std::snprintf(text, sizeof text, "%.17g", value);
    all.emplace_back(text, value);
  }
  TempDir dir;
  write_file(dir / "s.bin", std::string(all.size(), '\0'));
  std::string weights;
  for (std::size_t i = 0; i < all.size(); ++i)
    weights += (i ? "," : "") + std::string(R"({"name":"w)") + std::to_string(i) +
               R"(","shape":[1],"dtype":"float32","quantization":{"dtype":"uint8","scale":)" + all[i].first +
               R"(,"min":)" + all[i].first + "}}";
  write_file(dir / "weights_manifest.json", R"([{"paths":["s.bin"],"weights":[)" + weights + "]}]");
  const Manifest m = open_manifest(dir / "weights_manifest.json");
  REQUIRE(m.tensors.size() == all.size());
  for (std::size_t i = 0; i < all.size(); ++i) {
    INFO(all[i].first);
    REQUIRE(m.tensors[i].quantization);
    CHECK(m.tensors[i].quantization->scale.at(0) == all[i].second);
    CHECK(*m.tensors[i].quantization->min == all[i].second);
  }
}

TEST_CASE("a folder is recognised by its manifest's content, whatever the manifest is named") {
  TempDir dir;
  write_file(dir / "group1-shard1of1.bin", std::string(8, '\x01'));
  // face-api names its manifests "<model>-weights_manifest.json"; blazeface a graph model "blazeface.json".
  write_file(dir / "face_landmark_68_model-weights_manifest.json",
             R"([{"paths":["group1-shard1of1.bin"],"weights":[{"name":"w","shape":[2],"dtype":"float32"}]}])");
  write_file(dir / "labels.json", R"({"classes":["a","b"],"paths":"not a manifest"})");
  const Manifest m = open_manifest(dir.path());
  CHECK(m.format == "tfjs");
  REQUIRE(m.tensors.size() == 1);
  CHECK(m.tensors[0].name == "w");
  // A second manifest in the folder: which one is meant is the user's to say.
  write_file(dir / "blazeface.json", R"({"format":"graph-model","modelTopology":{},"weightsManifest":[
    {"paths":["group1-shard1of1.bin"],"weights":[{"name":"v","shape":[1],"dtype":"int32"}]}]})");
  try {
    (void)open_manifest(dir.path());
    FAIL("a folder with two manifests was opened");
  } catch (const Error& e) {
    const std::string what = e.what();
    CHECK(e.code() == ErrorCode::bad_input);
    CHECK(what.find("blazeface.json") != std::string::npos);
    CHECK(what.find("face_landmark_68_model-weights_manifest.json") != std::string::npos);
  }
  // Each opened directly.
  CHECK(open_manifest(dir / "blazeface.json").tensors.at(0).name == "v");
  CHECK(open_manifest(dir / "face_landmark_68_model-weights_manifest.json").tensors.at(0).name == "w");
}
