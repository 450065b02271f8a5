// TFLite / Circle reader: the real files in testdata against flatc's own decoding of them,
// generated models for what the samples lack (extended buffers past 4 GiB in a sparse file, Circle,
// schema 3d external buffer groups), and one malformed-input case per error class.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <boost/json.hpp>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "lwload/error.hpp"
#include "lwload/loader.hpp"
#include "lwload/machine.hpp"
#include "lwload/manifest.hpp"
#include "lwload/plan.hpp"
#include "lwload/memory_file_system.hpp"
#include "support/test_support.hpp"
#include "tflite_circle_schema_generated.h"
#include "tflite_schema_generated.h"

using namespace lwload;
namespace fs = std::filesystem;
namespace tfl = lwload::fb::tflite;
namespace cir = lwload::fb::circle;
using lwload::test::TempDir;

namespace {

// ---- building models with the flatbuffers builder (the same builder TFLite's exporter uses) ----

struct TensorSpec {
  std::string name;
  std::int8_t type = 0;  // TensorType value
  std::vector<std::int32_t> shape{};
  std::uint32_t buffer = 0;
  std::uint32_t external_buffer = 0;
  std::vector<float> scale{};
  std::vector<std::int64_t> zero_point{};
  std::int32_t axis = 0;
  // SparsityParameters. Levels in traversal order; index_type 1/2/3 = Int32/Uint16/Uint8Vector.
  struct Level {
    bool csr = false;
    std::int32_t dense_size = 0;
    std::vector<std::int32_t> segments{};
    std::vector<std::int32_t> indices{};
    int index_type = 1;
  };
  struct Sparse {
    std::vector<std::int32_t> traversal_order;
    std::vector<std::int32_t> block_map{};
    std::vector<Level> levels{};
  };
  std::optional<Sparse> sparse{};
};

// One SparseIndexVector of the given type.
flatbuffers::Offset<void> index_vector(flatbuffers::FlatBufferBuilder& b, int type,
                                       const std::vector<std::int32_t>& v) {
  if (type == 2) {
    const std::vector<std::uint16_t> u(v.begin(), v.end());
    return tfl::CreateUint16VectorDirect(b, &u).Union();
  }
  if (type == 3) {
    const std::vector<std::uint8_t> u(v.begin(), v.end());
    return tfl::CreateUint8VectorDirect(b, &u).Union();
  }
  return tfl::CreateInt32VectorDirect(b, &v).Union();
}

flatbuffers::Offset<tfl::SparsityParameters> build_sparsity(flatbuffers::FlatBufferBuilder& b,
                                                            const TensorSpec::Sparse& sparse) {
  std::vector<flatbuffers::Offset<tfl::DimensionMetadata>> dims;
  for (const auto& l : sparse.levels) {
    const auto type = static_cast<tfl::SparseIndexVector>(l.csr ? l.index_type : 0);
    const auto segments = l.csr ? index_vector(b, l.index_type, l.segments) : 0;
    const auto indices = l.csr ? index_vector(b, l.index_type, l.indices) : 0;
    dims.push_back(tfl::CreateDimensionMetadata(b, l.csr ? tfl::DimensionType_SPARSE_CSR : tfl::DimensionType_DENSE,
                                                l.dense_size, type, segments, type, indices));
  }
  return tfl::CreateSparsityParametersDirect(b, &sparse.traversal_order, &sparse.block_map, &dims);
}

struct BufferSpec {
  std::vector<std::uint8_t> data{};
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
};

struct ExternalSpec {
  std::uint32_t id = 0;
  std::uint32_t group = 0;
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
  std::string packing{};
};

struct SubgraphSpec {
  std::string name{};
  std::vector<TensorSpec> tensors{};
};

struct ModelSpec {
  std::string description = "built by test_tflite";
  std::vector<BufferSpec> buffers{BufferSpec{}};  // buffer 0: the empty sentinel
  std::vector<SubgraphSpec> subgraphs;
  std::vector<std::string> groups;
  std::vector<ExternalSpec> externals;
};

std::vector<std::byte> finish(flatbuffers::FlatBufferBuilder& b) {
  const auto* p = reinterpret_cast<const std::byte*>(b.GetBufferPointer());
  return {p, p + b.GetSize()};
}

std::vector<std::byte> build_tflite(const ModelSpec& spec) {
  flatbuffers::FlatBufferBuilder b;
  std::vector<flatbuffers::Offset<tfl::Buffer>> buffers;
  for (const auto& buffer : spec.buffers)
    buffers.push_back(
        tfl::CreateBufferDirect(b, buffer.data.empty() ? nullptr : &buffer.data, buffer.offset, buffer.size));
  std::vector<flatbuffers::Offset<tfl::SubGraph>> subgraphs;
  for (const auto& subgraph : spec.subgraphs) {
    std::vector<flatbuffers::Offset<tfl::Tensor>> tensors;
    for (const auto& t : subgraph.tensors) {
      flatbuffers::Offset<tfl::QuantizationParameters> q = 0;
      if (!t.scale.empty())
        q = tfl::CreateQuantizationParametersDirect(b, nullptr, nullptr, &t.scale,
                                                    t.zero_point.empty() ? nullptr : &t.zero_point, t.axis);
      const auto sparsity = t.sparse ? build_sparsity(b, *t.sparse) : 0;
      tensors.push_back(tfl::CreateTensorDirect(b, &t.shape, static_cast<tfl::TensorType>(t.type), t.buffer,
                                                t.name.c_str(), q, false, sparsity, t.external_buffer));
    }
    subgraphs.push_back(tfl::CreateSubGraphDirect(b, &tensors, subgraph.name.c_str()));
  }
  std::vector<flatbuffers::Offset<tfl::ExternalBufferGroup>> groups;
  for (const auto& g : spec.groups) groups.push_back(tfl::CreateExternalBufferGroupDirect(b, g.c_str()));
  std::vector<flatbuffers::Offset<tfl::ExternalBuffer>> externals;
  for (const auto& e : spec.externals)
    externals.push_back(tfl::CreateExternalBufferDirect(b, e.id, e.group, e.offset, e.length,
                                                        e.packing.empty() ? nullptr : e.packing.c_str()));
  const auto model =
      tfl::CreateModelDirect(b, 3, &subgraphs, spec.description.c_str(), &buffers, nullptr,
                             groups.empty() ? nullptr : &groups, externals.empty() ? nullptr : &externals);
  tfl::FinishModelBuffer(b, model);
  return finish(b);
}

struct CircleTensorSpec {
  std::string name;
  cir::TensorType type = cir::TensorType_FLOAT32;
  std::vector<std::int32_t> shape;
  std::uint32_t buffer = 0;
  cir::CompressionType compression = cir::CompressionType_NONE;
};

std::vector<std::byte> build_circle(const std::vector<BufferSpec>& buffer_specs,
                                    const std::vector<std::vector<CircleTensorSpec>>& subgraph_specs) {
  flatbuffers::FlatBufferBuilder b;
  std::vector<flatbuffers::Offset<cir::Buffer>> buffers;
  for (const auto& buffer : buffer_specs)
    buffers.push_back(
        cir::CreateBufferDirect(b, buffer.data.empty() ? nullptr : &buffer.data, buffer.offset, buffer.size));
  std::vector<flatbuffers::Offset<cir::SubGraph>> subgraphs;
  for (std::size_t i = 0; i < subgraph_specs.size(); ++i) {
    std::vector<flatbuffers::Offset<cir::Tensor>> tensors;
    for (const auto& t : subgraph_specs[i])
      tensors.push_back(
          cir::CreateTensorDirect(b, &t.shape, t.type, t.buffer, t.name.c_str(), 0, false, 0, t.compression));
    subgraphs.push_back(cir::CreateSubGraphDirect(b, &tensors, ("graph" + std::to_string(i)).c_str()));
  }
  const auto model = cir::CreateModelDirect(b, 0, &subgraphs, "circle model", &buffers);
  cir::FinishModelBuffer(b, model);
  return finish(b);
}

std::vector<std::uint8_t> pattern(std::size_t n, std::uint8_t seed) {
  std::vector<std::uint8_t> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<std::uint8_t>(seed + i * 7);
  return out;
}

std::vector<std::byte> as_bytes(const std::vector<std::uint8_t>& v) {
  const auto* p = reinterpret_cast<const std::byte*>(v.data());
  return {p, p + v.size()};
}

std::uint64_t round_up(std::uint64_t v, std::uint64_t a) { return (v + a - 1) / a * a; }

// Writes `data` at `offset` of an existing file (extends it sparsely when past the end).
void pwrite_at(const fs::path& path, std::uint64_t offset, const std::vector<std::uint8_t>& data) {
  const int fd = ::open(path.c_str(), O_WRONLY);
  REQUIRE(fd >= 0);
  REQUIRE(::pwrite(fd, data.data(), data.size(), static_cast<off_t>(offset)) == static_cast<ssize_t>(data.size()));
  ::close(fd);
}

using test::error_of;

bool contains(const std::string& text, std::string_view part) { return text.find(part) != std::string::npos; }

// Opens a one-subgraph model built from `tensors` and `buffers`, expecting an Error.
Error error_of_model(const TempDir& dir, ModelSpec spec) {
  const fs::path path = dir / "bad.tflite";
  test::write_file(path, build_tflite(spec));
  return error_of([&] { open_manifest(path); });
}

// ---- flatc's own decoding of a file, the independent reading the real samples are checked against ----

fs::path source_root() {
  fs::path here(__FILE__);  // relative to the build root when meson compiled it
  if (here.is_relative()) {
    const fs::path build = fs::read_symlink("/proc/self/exe").parent_path().parent_path();  // <build>/tests/test_tflite
    here = build / here;
  }
  return fs::weakly_canonical(here).parent_path().parent_path();
}

boost::json::value flatc_json(const fs::path& model, const TempDir& out) {
  const fs::path schema = source_root() / "lib" / "formats" / "tflite" / "tflite_schema.fbs";
  REQUIRE(fs::exists(schema));
  const std::string cmd = "flatc --json --strict-json --raw-binary -o '" + out.path().string() + "' '" +
                          schema.string() + "' -- '" + model.string() + "' 2>&1";
  std::string output;
  REQUIRE_MESSAGE(test::run_command(cmd, &output) == 0, output);
  const auto bytes = test::read_file(out / (model.stem().string() + ".json"));
  return boost::json::parse(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

std::string_view canonical_dtype(std::string_view tensor_type) {
  static const std::pair<std::string_view, std::string_view> kNames[] = {
      {"FLOAT32", "F32"},   {"FLOAT16", "F16"},     {"INT32", "I32"},  {"UINT8", "U8"},      {"INT64", "I64"},
      {"STRING", "STRING"}, {"BOOL", "BOOL"},       {"INT16", "I16"},  {"COMPLEX64", "C64"}, {"INT8", "I8"},
      {"FLOAT64", "F64"},   {"COMPLEX128", "C128"}, {"UINT64", "U64"}, {"UINT32", "U32"},    {"UINT16", "U16"},
      {"INT4", "I4"},       {"BFLOAT16", "BF16"}};
  for (const auto& [from, to] : kNames)
    if (from == tensor_type) return to;
  return "?";
}

const boost::json::array kEmpty;

const boost::json::array& array_at(const boost::json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v ? v->as_array() : kEmpty;
}

std::vector<std::uint32_t> index_values(const boost::json::object& dim, std::string_view field) {
  std::vector<std::uint32_t> out;
  if (const auto* v = dim.if_contains(field))
    for (const auto& x : array_at(v->as_object(), "values")) out.push_back(x.to_number<std::uint32_t>());
  return out;
}

// TensorInfo::sparsity against flatc's SparsityParameters: every level, index for index.
void check_sparsity(const TensorInfo& info, const boost::json::value* sparsity) {
  REQUIRE((sparsity != nullptr) == (info.sparsity != nullptr));
  if (!sparsity) return;
  const auto& sp = sparsity->as_object();
  std::vector<std::int32_t> order, blocks;
  for (const auto& v : array_at(sp, "traversal_order")) order.push_back(v.to_number<std::int32_t>());
  for (const auto& v : array_at(sp, "block_map")) blocks.push_back(v.to_number<std::int32_t>());
  CHECK(info.sparsity->traversal_order == order);
  CHECK(info.sparsity->block_map == blocks);
  const auto& dims = array_at(sp, "dim_metadata");
  REQUIRE(info.sparsity->levels.size() == dims.size());
  for (std::size_t i = 0; i < dims.size(); ++i) {
    const auto& dim = dims[i].as_object();
    const Sparsity::Level& level = info.sparsity->levels[i];
    const bool csr = dim.contains("format") && dim.at("format").as_string() == "SPARSE_CSR";
    CHECK(level.sparse == csr);
    if (!csr) CHECK(level.size == dim.at("dense_size").to_number<std::uint32_t>());
    CHECK(level.segments == index_values(dim, "array_segments"));
    CHECK(level.indices == index_values(dim, "array_indices"));
  }
  CHECK(info.sparsity->stored_values * dtype_layout(info.dtype)->block_bytes == info.bytes);
}

// Compares the manifest with flatc's JSON: the same tensors (those whose buffer has data), names,
// dtypes, shapes, quantization, and the bytes at each piece equal the buffer's data.
void check_against_flatc(const fs::path& model) {
  CAPTURE(model);
  TempDir out;
  const auto json = flatc_json(model, out).as_object();
  const Manifest m = open_manifest(model);
  CHECK(m.format == "tflite");
  REQUIRE(m.files.size() == 1);
  CHECK(m.files[0] == model);
  const auto& buffers = array_at(json, "buffers");
  std::size_t next = 0;
  const auto& subgraphs = array_at(json, "subgraphs");
  for (std::size_t sg = 0; sg < subgraphs.size(); ++sg) {
    for (const auto& tv : array_at(subgraphs[sg].as_object(), "tensors")) {
      const auto& t = tv.as_object();
      const std::int64_t buffer = t.contains("buffer") ? t.at("buffer").to_number<std::int64_t>() : 0;
      const auto& data =
          buffer == 0 ? kEmpty : array_at(buffers.at(static_cast<std::size_t>(buffer)).as_object(), "data");
      if (data.empty()) continue;  // no data: the reader omits it
      REQUIRE(next < m.tensors.size());
      const TensorInfo& info = m.tensors[next++];
      const std::string name(t.at("name").as_string());
      CHECK(info.name == (sg == 0 ? name : "subgraph" + std::to_string(sg) + "/" + name));
      const std::string type = t.contains("type") ? std::string(t.at("type").as_string()) : "FLOAT32";
      CHECK(dtype_name(info.dtype) == canonical_dtype(type));
      std::vector<std::int64_t> shape;
      for (const auto& d : array_at(t, "shape")) shape.push_back(d.to_number<std::int64_t>());
      CHECK(info.shape == shape);
      REQUIRE(info.pieces.size() == 1);
      CHECK(info.pieces[0].file == 0);
      CHECK(info.bytes == data.size());
      CHECK(info.pieces[0].length == data.size());
      const auto stored = test::read_range(model, info.pieces[0].offset, info.pieces[0].length);
      std::vector<std::byte> expected;
      for (const auto& v : data) expected.push_back(static_cast<std::byte>(v.to_number<int>()));
      CHECK(stored == expected);
      check_sparsity(info, t.if_contains("sparsity"));
      const auto* q = t.if_contains("quantization");
      const auto* scale = q ? q->as_object().if_contains("scale") : nullptr;
      if (!scale || scale->as_array().empty()) {
        CHECK_FALSE(info.quantization);
        continue;
      }
      REQUIRE(info.quantization);
      CHECK(info.quantization->scheme == "tflite");
      const auto& qo = q->as_object();
      REQUIRE(info.quantization->scale.size() == scale->as_array().size());
      for (std::size_t i = 0; i < info.quantization->scale.size(); ++i)  // flatc prints 6 decimals
        CHECK(std::abs(info.quantization->scale[i] - scale->as_array()[i].to_number<double>()) <= 1e-6);
      std::vector<std::int64_t> zero_points;
      for (const auto& z : array_at(qo, "zero_point")) zero_points.push_back(z.to_number<std::int64_t>());
      CHECK(info.quantization->zero_point == zero_points);
      const std::int64_t axis =
          qo.contains("quantized_dimension") ? qo.at("quantized_dimension").to_number<std::int64_t>() : 0;
      CHECK(info.quantization->axis == axis);
    }
  }
  CHECK(next == m.tensors.size());
  const auto* description = json.if_contains("description");
  const auto meta =
      std::find_if(m.metadata.begin(), m.metadata.end(), [](const MetaEntry& e) { return e.key == "description"; });
  if (description)
    CHECK((meta != m.metadata.end() && std::get<std::string>(meta->value.value) == description->as_string()));
}

const MetaValue* metadata(const Manifest& m, std::string_view key) {
  for (const auto& e : m.metadata)
    if (e.key == key) return &e.value;
  return nullptr;
}

}  // namespace

TEST_CASE("the real TFLite samples match flatc's decoding: names, dtypes, shapes, quantization, bytes") {
  const fs::path dir = test::testdata() / "tflite";
  for (const char* name : {"hello_world_float.tflite", "micro_speech_quantized.tflite", "seanet_conv9.tflite",
                           "face_detection_full_range_sparse.tflite"})
    check_against_flatc(dir / name);
}

TEST_CASE("MediaPipe's sparse model: stored values and densified tensors equal the independent reader's") {
  const fs::path model = test::testdata() / "tflite" / "face_detection_full_range_sparse.tflite";
  const auto device = open_device("host");
  for (const bool densify : {false, true}) {
    CAPTURE(densify);
    OpenOptions options;
    options.densify = densify;
    const Manifest m = open_manifest(model, options);
    const auto sparse =
        std::count_if(m.tensors.begin(), m.tensors.end(), [](const auto& t) { return t.sparsity != nullptr; });
    CHECK(sparse == 46);
    const TensorInfo* w = m.find("model_1/model/conv2d_1/Conv2D_dequantize");
    REQUIRE(w);
    CHECK(w->bytes == (densify ? 8u * 32 * 2 : 77u * 2));  // float16 [8, 1, 1, 32], 77 values stored
    const Weights weights = load(m, *device);
    CHECK(test::check_against_reference(model, "tflite", m, weights, densify ? "--densify" : "") == 188);
    CHECK(verify(weights).tensors == 188);
  }
}

TEST_CASE("the real TFLite samples: known tensors, metadata, and the in-memory file system agrees") {
  const fs::path hello = test::testdata() / "tflite" / "hello_world_float.tflite";
  const Manifest m = open_manifest(hello);
  REQUIRE(m.tensors.size() == 6);  // 10 tensors, 4 of them activations/inputs without data
  const TensorInfo* w = m.find("sequential/dense_1/MatMul");
  REQUIRE(w);
  CHECK(w->dtype == DType::F32);
  CHECK(w->shape == std::vector<std::int64_t>{16, 16});
  CHECK(w->bytes == 1024);
  CHECK(std::get<std::string>(metadata(m, "description")->value) == "MLIR Converted.");
  CHECK(std::get<std::uint64_t>(metadata(m, "version")->value) == 3);
  CHECK(std::get<std::string>(metadata(m, "metadata.min_runtime_version")->value) == "1.5.0");
  const auto& subgraphs = std::get<MetaValue::Array>(metadata(m, "subgraphs")->value);
  REQUIRE(subgraphs.size() == 1);
  CHECK(std::get<std::string>(subgraphs[0].value) == "main");

  const Manifest speech = open_manifest(test::testdata() / "tflite" / "micro_speech_quantized.tflite");
  const TensorInfo* first = speech.find("first_weights/read");
  REQUIRE(first);
  CHECK(first->dtype == DType::I8);
  CHECK(first->shape == std::vector<std::int64_t>{1, 10, 8, 8});
  REQUIRE(first->quantization);
  CHECK(first->quantization->axis == 3);  // per channel along the last dimension
  CHECK(first->quantization->scale.size() == 8);

  // A file system without descriptors (the flatbuffer is read into memory): the same manifest.
  auto memory = std::make_shared<MemoryFileSystem>();
  memory->add_file("hello.tflite", test::read_file(hello));
  const Manifest in_memory = open_manifest("hello.tflite", OpenOptions{memory, ""});
  REQUIRE(in_memory.tensors.size() == m.tensors.size());
  for (std::size_t i = 0; i < m.tensors.size(); ++i) {
    CHECK(in_memory.tensors[i].name == m.tensors[i].name);
    CHECK(in_memory.tensors[i].pieces[0].offset == m.tensors[i].pieces[0].offset);
  }
}

TEST_CASE("extended buffers past 4 GiB in a sparse file: absolute offsets, shared buffers, every subgraph") {
  TempDir dir;
  const fs::path path = dir / "big.tflite";
  const auto near = pattern(4096, 1), far = pattern(64 * 1024, 9), inline_bias = pattern(16, 5);
  const std::uint64_t far_offset = (std::uint64_t{5} << 30) + 4096;  // 5 GiB + 4 KiB

  // Two passes, as TFLite's exporter does: the flatbuffer's size does not depend on the offsets'
  // values (scalars), so build once to learn it, then again with the data placed after it.
  ModelSpec spec;
  spec.buffers.push_back(BufferSpec{{}, 2, near.size()});
  spec.buffers.push_back(BufferSpec{{}, 2, far.size()});
  spec.buffers.push_back(BufferSpec{inline_bias, 0, 0});
  spec.subgraphs.push_back({"main",
                            {{"input", 0, {1, 1024}, 0},
                             {"near", 0, {1024}, 1},
                             {"far", 3, {256, 256}, 2, 0, {0.5f}, {3}},
                             {"near_again", 9, {4096}, 1},  // a second view of buffer 1
                             {"bias", 1, {8}, 3}}});
  spec.subgraphs.push_back({"other", {{"far", 3, {65536}, 2}, {"activation", 0, {4}, 0}}});
  const std::uint64_t near_offset = round_up(build_tflite(spec).size(), 16);
  spec.buffers[1].offset = near_offset;
  spec.buffers[2].offset = far_offset;
  const auto flatbuffer = build_tflite(spec);
  REQUIRE(flatbuffer.size() <= near_offset);
  test::write_file(path, flatbuffer);
  pwrite_at(path, near_offset, near);
  pwrite_at(path, far_offset, far);

  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK(static_cast<std::uint64_t>(st.st_size) == far_offset + far.size());
  CHECK(static_cast<std::uint64_t>(st.st_blocks) * 512 < 1024 * 1024);  // sparse: the disk holds ~70 KiB

  const Manifest m = open_manifest(path);
  CHECK(m.format == "tflite");
  REQUIRE(m.tensors.size() == 5);
  CHECK(m.tensors[0].name == "near");
  CHECK(m.tensors[0].pieces[0].offset == near_offset);
  CHECK(m.tensors[0].bytes == near.size());
  CHECK(m.tensors[1].name == "far");
  CHECK(m.tensors[1].dtype == DType::U8);
  CHECK(m.tensors[1].pieces[0].offset == far_offset);
  CHECK(m.tensors[1].bytes == far.size());
  REQUIRE(m.tensors[1].quantization);
  CHECK(m.tensors[1].quantization->scale == std::vector<double>{0.5});
  CHECK(m.tensors[1].quantization->zero_point == std::vector<std::int64_t>{3});
  CHECK(m.tensors[2].name == "near_again");
  CHECK(m.tensors[2].dtype == DType::I8);
  CHECK(m.tensors[2].pieces[0].offset == near_offset);
  CHECK(m.tensors[3].name == "bias");
  CHECK(m.tensors[3].dtype == DType::F16);
  CHECK(m.tensors[4].name == "subgraph1/far");
  CHECK(m.tensors[4].pieces[0].offset == far_offset);
  CHECK(test::read_range(path, far_offset, far.size()) == as_bytes(far));
  CHECK(test::read_range(path, m.tensors[3].pieces[0].offset, 16) == as_bytes(inline_bias));
  CHECK(m.total_bytes() == near.size() + far.size() + near.size() + 16 + far.size());
  // The writer above and lwload share lwload's schema; the reference reader shares nothing (field
  // ids from TensorFlow's published schema): a field id wrong in both still differs here.
  {
    const auto host = open_device("host");
    const Weights w = load(m, *host);
    CHECK(test::check_against_reference(path, "tflite", m, w) == 5);
  }

  if (const char* exe = std::getenv("LWLOAD_EXE")) {
    std::string out;
    CHECK(test::run_command(std::string(exe) + " inspect --json '" + path.string() + "'", &out) == 0);
    CHECK(contains(out, std::to_string(far_offset)));
  }
}

TEST_CASE("Circle files: CIR0, ggml block types, INT4, tensors of every subgraph") {
  TempDir dir;
  const fs::path path = dir / "model.circle";
  const auto q4 = pattern(2 * 18, 2), weights = pattern(24, 4), nibbles = pattern(2, 6);
  test::write_file(
      path, build_circle({BufferSpec{}, {q4}, {weights}, {nibbles}}, {{{"w", cir::TensorType_GGML_Q4_0, {2, 32}, 1},
                                                                       {"x", cir::TensorType_FLOAT32, {1, 6}, 0},
                                                                       {"i4", cir::TensorType_INT4, {3}, 3}},
                                                                      {{"w", cir::TensorType_FLOAT32, {2, 3}, 2}}}));
  const Manifest m = open_manifest(path);
  CHECK(m.format == "circle");
  REQUIRE(m.tensors.size() == 3);
  CHECK(m.tensors[0].name == "w");
  CHECK(m.tensors[0].dtype == DType::Q4_0);
  CHECK(m.tensors[0].bytes == 36);
  CHECK(test::read_range(path, m.tensors[0].pieces[0].offset, 36) == as_bytes(q4));
  CHECK(m.tensors[1].name == "i4");
  CHECK(m.tensors[1].dtype == DType::I4);  // three 4-bit values in two bytes
  CHECK(m.tensors[1].bytes == 2);
  CHECK(m.tensors[2].name == "subgraph1/w");
  CHECK(m.tensors[2].dtype == DType::F32);
  CHECK(test::read_range(path, m.tensors[2].pieces[0].offset, 24) == as_bytes(weights));
  const auto& names = std::get<MetaValue::Array>(metadata(m, "subgraphs")->value);
  REQUIRE(names.size() == 2);
  CHECK(std::get<std::string>(names[1].value) == "graph1");

  // Circle's extensions lwload refuses rather than guesses at.
  test::write_file(path, build_circle({BufferSpec{}, {weights}},
                                      {{{"h", cir::TensorType_FLOAT32, {6}, 1, cir::CompressionType_HUFFMAN}}}));
  Error e = error_of([&] { open_manifest(path); });
  CHECK(e.code() == ErrorCode::unsupported);
  CHECK(contains(e.what(), "tensor 'h'"));
  CHECK(contains(e.what(), "compression_type"));
  test::write_file(path, build_circle({BufferSpec{}, {nibbles}}, {{{"u4", cir::TensorType_UINT4, {4}, 1}}}));
  e = error_of([&] { open_manifest(path); });
  CHECK(e.code() == ErrorCode::unsupported);
  CHECK(contains(e.what(), "UINT4"));
}

TEST_CASE("schema 3d external buffer groups: files relative to the model's folder") {
  TempDir dir;
  fs::create_directories(dir / "model" / "weights");
  const auto a = pattern(4096 + 64, 3), b = pattern(128, 8);
  test::write_file(dir / "model" / "weights" / "a.bin", as_bytes(a));
  test::write_file(dir / "model" / "b.bin", as_bytes(b));
  ModelSpec spec;
  spec.groups = {"weights/a.bin", "b.bin"};
  spec.externals = {{0x80000000u, 0, 64, 4096, "unpacked"}, {0x80000001u, 1, 0, 128, ""}};
  spec.subgraphs.push_back({"main",
                            {{"big", 0, {32, 32}, 0, 0x80000000u},
                             {"small", 9, {128}, 0, 0x80000001u},
                             {"same", 3, {4096}, 0, 0x80000000u}}});
  const fs::path path = dir / "model" / "model.tflite";
  test::write_file(path, build_tflite(spec));

  const Manifest m = open_manifest(path);
  REQUIRE(m.files.size() == 3);
  CHECK(m.files[0] == path);
  CHECK(m.files[1] == dir / "model" / "weights" / "a.bin");
  CHECK(m.files[2] == dir / "model" / "b.bin");
  REQUIRE(m.tensors.size() == 3);
  CHECK(m.tensors[0].pieces[0].file == 1);
  CHECK(m.tensors[0].pieces[0].offset == 64);
  CHECK(m.tensors[0].bytes == 4096);
  CHECK(m.tensors[1].pieces[0].file == 2);
  CHECK(m.tensors[1].dtype == DType::I8);
  CHECK(m.tensors[2].pieces[0].file == 1);
  const auto a_bytes = as_bytes(a);
  CHECK(test::read_range(m.files[1], 64, 4096) == std::vector<std::byte>(a_bytes.begin() + 64, a_bytes.end()));
  CHECK(test::read_range(m.files[2], 0, 128) == as_bytes(b));
}

TEST_CASE("an external buffer group file that links out of the model's folder is refused, before it is read") {
  TempDir dir;
  fs::create_directories(dir / "model" / "weights");
  const auto outside = pattern(4096 + 64, 5);
  test::write_file(dir / "outside.bin", as_bytes(outside));
  fs::create_symlink(dir / "outside.bin", dir / "model" / "weights" / "a.bin");  // an absolute link out
  fs::create_symlink("../outside.bin", dir / "model" / "b.bin");                 // a relative one
  ModelSpec spec;
  spec.externals = {{0x80000000u, 0, 64, 4096, ""}};
  spec.subgraphs.push_back({"main", {{"w", 0, {32, 32}, 0, 0x80000000u}}});
  const fs::path path = dir / "model" / "model.tflite";
  for (const std::string group : {"weights/a.bin", "b.bin"}) {
    spec.groups = {group};
    test::write_file(path, build_tflite(spec));
    const Error e = error_of([&] { open_manifest(path); });
    CHECK(e.code() == ErrorCode::bad_input);
    CHECK(contains(e.what(), (dir / "model" / group).string() + ": resolves to " + (dir / "outside.bin").string() +
                                 ", outside the model folder"));
    CHECK(contains(e.what(), "--allow-outside-links"));
    if (const char* exe = std::getenv("LWLOAD_EXE")) {
      std::string out;
      CHECK(test::run_command(std::string(exe) + " inspect " + path.string() + " 2>&1", &out) == 3);
      CHECK(contains(out, "outside the model folder"));
    }
    // Followed when the caller allows links out (weights in a shared cache).
    OpenOptions allow;
    allow.allow_outside_links = true;
    const Manifest m = open_manifest(path, allow);
    REQUIRE(m.tensors.size() == 1);
    CHECK(m.files.at(1) == dir / "model" / group);
    const auto expected = as_bytes(outside);
    CHECK(test::read_range(m.files[1], 64, 4096) == std::vector<std::byte>(expected.begin() + 64, expected.end()));
  }
}

// The dense tensor TFLite's Densify computes, worked out by hand for each case below.
TEST_CASE("sparse TFLite tensors: the stored values by default, the dense tensor with densify, on the host") {
  TempDir dir;
  const auto floats = [](std::vector<float> v) {
    std::vector<std::uint8_t> out(v.size() * 4);
    if (!v.empty()) std::memcpy(out.data(), v.data(), out.size());  // (memcpy from null is undefined, even of 0 bytes)
    return out;
  };
  struct Case {
    const char* what;
    std::vector<std::int32_t> shape;
    TensorSpec::Sparse sparse;
    std::vector<float> values;
    std::vector<float> dense;
  };
  const std::vector<Case> cases = {
      {"CSR rows (int32 indices)",
       {3, 4},
       {{0, 1}, {}, {{false, 3}, {true, 0, {0, 2, 2, 3}, {1, 3, 0}}}},
       {1, 2, 3},
       {0, 1, 0, 2, 0, 0, 0, 0, 3, 0, 0, 0}},
      {"CSR rows (uint8 indices)",
       {3, 4},
       {{0, 1}, {}, {{false, 3}, {true, 0, {0, 2, 2, 3}, {1, 3, 0}, 3}}},
       {1, 2, 3},
       {0, 1, 0, 2, 0, 0, 0, 0, 3, 0, 0, 0}},
      {"columns first (traversal order 1, 0; uint16 indices)",
       {2, 3},
       {{1, 0}, {}, {{false, 3}, {true, 0, {0, 1, 1, 3}, {1, 0, 1}, 2}}},
       {5, 6, 7},
       {0, 0, 6, 5, 0, 7}},
      {"2x2 blocks (block_map 0, 1)",
       {4, 4},
       {{0, 1, 2, 3}, {0, 1}, {{false, 2}, {true, 0, {0, 1, 2}, {0, 1}}, {false, 2}, {false, 2}}},
       {1, 2, 3, 4, 5, 6, 7, 8},
       {1, 2, 0, 0, 3, 4, 0, 0, 0, 0, 5, 6, 0, 0, 7, 8}},
      {"a 1x4 block over columns (the layout of MediaPipe's sparse models)",
       {2, 8},
       {{0, 1, 2}, {1}, {{false, 2}, {true, 0, {0, 1, 3}, {1, 0, 1}}, {false, 4}}},
       {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12},
       {0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}},
      {"no value stored: all zeros", {2, 2}, {{0, 1}, {}, {{false, 2}, {true, 0, {0, 0, 0}, {}}}}, {}, {0, 0, 0, 0}},
  };
  const auto device = open_device("host");
  for (const auto& c : cases) {
    CAPTURE(c.what);
    ModelSpec spec;
    spec.buffers.push_back(BufferSpec{floats(c.values)});
    TensorSpec t{"w", 0, c.shape, 1};
    t.sparse = c.sparse;
    spec.subgraphs.push_back({"main", {t, {"activation", 0, {4}, 0}}});
    const fs::path path = dir / "sparse.tflite";
    test::write_file(path, build_tflite(spec));

    const Manifest stored = open_manifest(path);
    REQUIRE(stored.tensors.size() == 1);  // the activation has no data; the sparse constant is there
    const TensorInfo& s = stored.tensors[0];
    REQUIRE(s.sparsity);
    CHECK(s.encoding == Encoding::raw);
    CHECK(s.shape == std::vector<std::int64_t>(c.shape.begin(), c.shape.end()));
    CHECK(s.bytes == c.values.size() * 4);
    CHECK(s.sparsity->stored_values == c.values.size());
    CHECK(s.sparsity->dense_bytes == c.dense.size() * 4);
    const Weights ws = load(stored, *device);
    std::vector<std::byte> got(s.bytes);
    if (!got.empty()) ws.read_back(*ws.find("w"), 0, got);
    CHECK(got == as_bytes(floats(c.values)));
    CHECK(verify(ws).tensors == (c.values.empty() ? 0u : 1u));

    OpenOptions dense_options;
    dense_options.densify = true;
    const Manifest dense = open_manifest(path, dense_options);
    const TensorInfo& d = dense.tensors.at(0);
    CHECK(d.encoding == Encoding::sparse);
    CHECK(d.bytes == c.dense.size() * 4);
    const Weights wd = load(dense, *device);
    std::vector<std::byte> expanded(d.bytes);
    wd.read_back(*wd.find("w"), 0, expanded);
    CHECK(expanded == as_bytes(floats(c.dense)));
    CHECK(verify(wd).tensors == 1);
  }
}

// ---- densify bounded by memory, not by a ratio (docs/ARCHITECTURE.md "Over-memory loads", check_decodes_fit) ----

namespace densify_memory {

// A [rows, cols] FLOAT32 tensor "w" stored sparse: level 0 lists the rows that hold values (CSR),
// level 1 each such row's columns (CSR), or every column of them when `dense_rows` (then no index
// arrays grow with the tensor). Beside it a raw tensor "b" (4 floats). `values` inline, or — when
// `hole_offset` is not 0 — `stored_bytes` of zeros in a hole of the file at that offset (an
// extended buffer: a large sparse tensor costs no disk).
struct Sparse2d {
  std::int32_t rows = 0, cols = 0;
  std::vector<std::int32_t> value_rows;               // rows holding values, ascending
  std::vector<std::vector<std::int32_t>> value_cols;  // per such row, its columns (unless dense_rows)
  bool dense_rows = false;
  std::vector<float> values;
  std::uint64_t hole_offset = 0;
  std::uint64_t stored_bytes = 0;
};

std::vector<std::uint8_t> float_bytes(const std::vector<float>& v) {
  std::vector<std::uint8_t> out(v.size() * 4);
  if (!v.empty()) std::memcpy(out.data(), v.data(), out.size());
  return out;
}

void write_sparse2d(const fs::path& path, const Sparse2d& s) {
  TensorSpec::Sparse sparse{{0, 1}};
  std::vector<std::int32_t> row_segments{0, static_cast<std::int32_t>(s.value_rows.size())};
  sparse.levels.push_back({true, 0, row_segments, s.value_rows});
  if (s.dense_rows) {
    sparse.levels.push_back({false, s.cols});
  } else {
    std::vector<std::int32_t> segments{0}, indices;
    for (const auto& cols : s.value_cols) {
      indices.insert(indices.end(), cols.begin(), cols.end());
      segments.push_back(static_cast<std::int32_t>(indices.size()));
    }
    sparse.levels.push_back({true, 0, segments, indices});
  }
  ModelSpec spec;
  if (s.hole_offset == 0) spec.buffers.push_back(BufferSpec{float_bytes(s.values)});
  else spec.buffers.push_back(BufferSpec{{}, s.hole_offset, s.stored_bytes});
  spec.buffers.push_back(BufferSpec{float_bytes({1, 2, 3, 4})});
  TensorSpec w{"w", 0, {s.rows, s.cols}, 1};
  w.sparse = sparse;
  spec.subgraphs.push_back({"main", {w, {"b", 0, {4}, 2}}});
  test::write_file(path, build_tflite(spec));
  if (s.hole_offset != 0) {
    REQUIRE(fs::file_size(path) <= s.hole_offset);
    fs::resize_file(path, s.hole_offset + s.stored_bytes);  // the stored values: a hole, zeros
  }
}

// The dense tensor TFLite's Densify makes of `s` (inline values only).
std::vector<std::byte> dense_of(const Sparse2d& s) {
  std::vector<float> dense(static_cast<std::size_t>(s.rows) * static_cast<std::size_t>(s.cols), 0.0f);
  std::size_t next = 0;
  for (std::size_t r = 0; r < s.value_rows.size(); ++r)
    for (const std::int32_t c : s.value_cols[r])
      dense[static_cast<std::size_t>(s.value_rows[r]) * static_cast<std::size_t>(s.cols) +
            static_cast<std::size_t>(c)] = s.values[next++];
  return as_bytes(float_bytes(dense));
}

// 256 × 1024 floats (1 MiB) from four stored values (16 bytes): 65536 times its stored bytes.
Sparse2d far_past_16x() {
  return {256, 1024, {0, 17, 100, 255}, {{5}, {1000}, {0}, {1023}}, false, {1.5f, -2.0f, 7.0f, 3.25f}};
}

// 4 × 8 floats (128 bytes) from rows 1 and 2 stored whole (64 bytes): twice its stored bytes.
Sparse2d twice() {
  return {4,      8,
          {1, 2}, {{0, 1, 2, 3, 4, 5, 6, 7}, {0, 1, 2, 3, 4, 5, 6, 7}},
          false,  {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}};
}

MachineMemory available(std::uint64_t bytes) {
  MachineMemory m;
  m.mem_total = m.mem_available = bytes;
  return m;
}

OpenOptions densified() {
  OpenOptions o;
  o.densify = true;
  return o;
}

}  // namespace densify_memory

TEST_CASE(
    "densify: a tensor 65536 times its stored bytes loads when it fits memory, byte for byte, direct and staged") {
  using namespace densify_memory;
  TempDir dir;
  const fs::path path = dir / "far.tflite";
  const Sparse2d s = far_past_16x();
  write_sparse2d(path, s);
  const Manifest m = open_manifest(path, densified());
  const TensorInfo& w = *m.find("w");
  REQUIRE(w.encoding == Encoding::sparse);
  REQUIRE(w.pieces.size() == 1);
  const std::uint64_t stored = w.pieces[0].length, dense = w.bytes;
  CHECK(stored == 16);
  CHECK(dense == 1u << 20);
  CHECK(dense / stored == 65536);  // far past the 16× a ratio rule allowed
  const std::vector<std::byte> reference = dense_of(s);
  REQUIRE(reference.size() == dense);

  // The rule: stored + dense bytes at once, against the machine — exactly, not a byte more.
  check_decodes_fit(m, available(stored + dense));
  check_decodes_fit(m, MachineMemory{});  // nothing known: nothing checked
  CHECK(error_of([&] { check_decodes_fit(m, available(stored + dense - 1)); }).code() == ErrorCode::does_not_fit);

  const auto device = open_device("host");
  for (const Placement placement : {Placement::direct, Placement::staged}) {
    CAPTURE(placement_name(placement));
    LoadOptions options;
    options.plan.force = placement;
    options.plan.machine = available(std::uint64_t{1} << 30);
    const Weights weights = load(m, *device, options);
    const std::size_t index = static_cast<std::size_t>(&w - m.tensors.data());
    REQUIRE(weights.plan().tensors[index].placement == placement);
    // The decode scratch the plan counts: the stored bytes, and the dense ones when staged (direct
    // decodes straight into the tensor's host-visible buffer).
    CHECK(weights.plan().decode_bytes == (placement == Placement::staged ? stored + dense : stored));
    std::vector<std::byte> got(dense);
    weights.read_back(*weights.find("w"), 0, got);
    CHECK(got == reference);
    CHECK(verify(weights).tensors == 2);
  }
}

TEST_CASE(
    "densify: memory too small for stored + dense bytes is refused before any read, by the plan, the load and "
    "inspect's check alike") {
  using namespace densify_memory;
  TempDir dir;
  const fs::path path = dir / "twice.tflite";
  write_sparse2d(path, twice());
  const Manifest m = open_manifest(path, densified());
  const TensorInfo& w = *m.find("w");
  REQUIRE(w.bytes == 128);
  REQUIRE(w.pieces.at(0).length == 64);  // twice: well inside any ratio rule, refused by memory alone
  const auto device = open_device("host");

  // Each way of asking: inspect's check, the plan, the load; the same Error, word for word.
  const auto refusals = [&](const MachineMemory& machine) {
    std::vector<std::string> what;
    const Error checked = error_of([&] { check_decodes_fit(m, machine); });
    PlanOptions plan_options;
    plan_options.machine = machine;
    const Error planned = error_of([&] { make_plan(m, device->info(), plan_options); });
    LoadOptions load_options;
    load_options.plan.machine = machine;
    const Error loaded = error_of([&] { load(m, *device, load_options); });
    for (const Error* e : {&checked, &planned, &loaded}) {
      CHECK(e->code() == ErrorCode::does_not_fit);
      what.emplace_back(e->what());
    }
    CHECK(what[1] == what[0]);
    CHECK(what[2] == what[0]);
    return what[0];
  };

  const std::string host = refusals(available(191));
  CHECK(host ==
        path.string() +
            ": densifying tensor 'w' needs 192 bytes (0.0 MiB) at once (64 bytes stored + 128 bytes dense) "
            "but the machine has 191 bytes (0.0 MiB) of host memory available (MemAvailable); nothing was read");

  MachineMemory limited = available(std::uint64_t{1} << 30);
  limited.address_space_limit = 1000;
  limited.address_space_used = 1000 - 150;
  const std::string address = refusals(limited);
  CHECK(contains(address, path.string() + ": densifying tensor 'w' needs 192 bytes"));
  CHECK(contains(address, "but RLIMIT_AS (1000 bytes) leaves 150 bytes (0.0 MiB) of address space to this process"));

  // Exactly enough for the decode passes the rule; the whole load (the host's allocations are
  // this process's memory: "w" 128 and "b" 16 bytes, direct, beside the 64 of scratch) does not
  // fit 200 bytes, and its refusal says what the decode holds of it.
  check_decodes_fit(m, available(192));
  LoadOptions direct;
  direct.plan.force = Placement::direct;
  direct.plan.machine = available(200);
  const std::string whole = error_of([&] { load(m, *device, direct); }).what();
  CHECK(contains(whole, "the load needs 208 bytes (0.0 MiB) of host memory resident at once"));
  CHECK(contains(whole, "; of it, densifying tensor 'w' (" + path.string() + ") holds 64 bytes of scratch"));
  direct.plan.machine = available(208);
  CHECK(load(m, *device, direct).plan().host.resident == 208);
  // With room for the rest of the load, it loads.
  LoadOptions fits;
  fits.plan.machine = available(std::uint64_t{1} << 30);
  CHECK(load(m, *device, fits).plan().decode_bytes == 64);
  // A load that leaves the tensor out does not decode it: nothing to refuse (lazy: the mapped
  // pages of "b" need not be resident in 191 bytes either).
  LoadOptions only_b;
  only_b.plan.machine = available(191);
  only_b.plan.lazy = true;
  only_b.plan.only = {"b"};
  CHECK(load(m, *device, only_b).plan().count(Placement::skipped) == 1);
  // The stored values, not densified: no decode, no refusal.
  PlanOptions stored;
  stored.machine = available(191);
  stored.lazy = true;
  const Plan plan = make_plan(open_manifest(path), device->info(), stored);
  CHECK(plan.model_bytes == 64 + 16);
  CHECK(plan.decode_bytes == 0);
}

TEST_CASE(
    "lwload inspect --densify, plan --densify and load --densify agree on every file: load, or the same refusal") {
  using namespace densify_memory;
  if (!test::have_exe()) return;
  // Every command runs under `ulimit -v`, which AddressSanitizer's shadow memory cannot live in.
  if (!test::can_limit_address_space()) return;
  TempDir dir;
  // 2 GiB dense from 128 MiB stored (16×, the most a ratio rule let through), stored in a hole.
  const std::int32_t wide_cols = 32 << 20;
  Sparse2d wide{16, wide_cols, {3}, {}, true, {}, 4096, std::uint64_t{wide_cols} * 4};
  // 1 TiB dense from one stored value.
  Sparse2d vast{1 << 16, 1 << 22, {65535}, {{4194303}}, false, {9.0f}};
  write_sparse2d(dir / "far.tflite", far_past_16x());
  write_sparse2d(dir / "twice.tflite", twice());
  write_sparse2d(dir / "wide.tflite", wide);
  write_sparse2d(dir / "vast.tflite", vast);
  fs::copy_file(test::testdata() / "tflite" / "face_detection_full_range_sparse.tflite", dir / "face.tflite");

  // Every run under 1 GiB of address space: nothing here may take more, whatever the machine has.
  const std::uint64_t limit = std::uint64_t{1} << 30;
  const auto run = [&](const std::string& args, std::string* err) {
    const std::string command = "bash -c \"ulimit -v " + std::to_string(limit / 1024) + "; exec '" +
                                std::getenv("LWLOAD_EXE") + "' " + args + "\" 2>&1 >/dev/null";
    err->clear();
    return test::run_command(command, err);
  };
  struct Expect {
    const char* file;
    bool loads;
  };
  for (const Expect& e : {Expect{"far.tflite", true}, Expect{"twice.tflite", true}, Expect{"face.tflite", true},
                          Expect{"wide.tflite", false}, Expect{"vast.tflite", false}}) {
    CAPTURE(e.file);
    const std::string model = "'" + (dir / e.file).string() + "'";
    std::string inspect_err, plan_err, load_err;
    const int inspected = run("inspect --densify " + model, &inspect_err);
    const int planned = run("plan --densify --device host " + model, &plan_err);
    const int loaded = run("load --densify --device host --verify " + model, &load_err);
    CAPTURE(inspect_err);
    CAPTURE(load_err);
    CHECK(inspected == (e.loads ? 0 : 1));
    CHECK(planned == inspected);
    CHECK(loaded == inspected);
    if (e.loads) continue;
    // The same refusal: the file, the tensor, the bytes it needs; then what RLIMIT_AS leaves (this
    // process's own mappings, which differ by a few pages from one command to the other).
    const std::string head = "lwload: error: " + (dir / e.file).string() + ": densifying tensor 'w' needs ";
    CHECK(inspect_err.starts_with(head));
    const auto until_but = [](const std::string& text) { return text.substr(0, text.find(" but ")); };
    CHECK(until_but(plan_err) == until_but(inspect_err));
    CHECK(until_but(load_err) == until_but(inspect_err));
    for (const std::string* err : {&inspect_err, &plan_err, &load_err})
      CHECK(contains(*err, "but RLIMIT_AS (" + std::to_string(limit) + " bytes) leaves "));
  }
  // Their stored values, not densified, load as they are (128 MiB of the hole for "wide").
  std::string err;
  CHECK(run("inspect '" + (dir / "wide.tflite").string() + "'", &err) == 0);
  CHECK(run("load --device host '" + (dir / "vast.tflite").string() + "'", &err) == 0);
}

namespace truncation {

// The POSIX file system, except that the first read of more than a page (the snapshot of the
// tables, after the pre-walk's small reads) first truncates the file to `keep` bytes — another
// process truncating it during inspect — and any map() is recorded.
class TruncatingFileSystem final : public FileSystem {
 public:
  explicit TruncatingFileSystem(std::uint64_t keep) : keep_(keep) {}
  std::unique_ptr<RandomAccessFile> open(const fs::path& path, FileOpenFlags flags) override {
    return std::make_unique<File>(*this, inner_->open(path, flags));
  }
  bool is_directory(const fs::path& path) override { return inner_->is_directory(path); }
  bool exists(const fs::path& path) override { return inner_->exists(path); }
  bool truncated = false, mapped = false;

 private:
  class File final : public RandomAccessFile {
   public:
    File(TruncatingFileSystem& owner, std::unique_ptr<RandomAccessFile> inner)
        : owner_(owner), inner_(std::move(inner)) {}
    const fs::path& path() const noexcept override { return inner_->path(); }
    std::uint64_t size() const override { return inner_->size(); }
    std::size_t read_at(std::uint64_t offset, std::span<std::byte> dst) const override {
      if (dst.size() > 4096 && !owner_.truncated) {
        fs::resize_file(inner_->path(), owner_.keep_);
        owner_.truncated = true;
      }
      return inner_->read_at(offset, dst);
    }
    int native_handle() const noexcept override { return inner_->native_handle(); }

   protected:
    std::shared_ptr<const FileMapping> do_map(std::uint64_t offset, std::uint64_t length,
                                              MapAccess access) const override {
      owner_.mapped = true;
      return inner_->map(offset, length, access);
    }

   private:
    TruncatingFileSystem& owner_;
    std::unique_ptr<RandomAccessFile> inner_;
  };
  std::uint64_t keep_;
  std::shared_ptr<FileSystem> inner_ = posix_file_system();
};

std::atomic<int> sigbus_seen{0};
void count_sigbus(int) { sigbus_seen.fetch_add(1); }

}  // namespace truncation

TEST_CASE("a TFLite file truncated while it is inspected: a clean error, the file never mapped, no signal") {
  using namespace truncation;
  struct sigaction app {
  }, previous{};
  app.sa_handler = count_sigbus;
  ::sigaction(SIGBUS, &app, &previous);
  TempDir dir;
  const fs::path model = dir / "face.tflite";
  fs::copy_file(test::testdata() / "tflite" / "face_detection_full_range_sparse.tflite", model);
  auto file_system = std::make_shared<TruncatingFileSystem>(64 * 1024);
  OpenOptions options;
  options.file_system = file_system;
  const Error e = test::error_of([&] { (void)open_manifest(model, options); });
  ::sigaction(SIGBUS, &previous, nullptr);
  CHECK(file_system->truncated);
  CHECK_FALSE(file_system->mapped);
  CHECK(sigbus_seen.load() == 0);
  CHECK(contains(e.what(), model.string()));
  // Intact, the same file opens with every tensor.
  fs::copy_file(test::testdata() / "tflite" / "face_detection_full_range_sparse.tflite", model,
                fs::copy_options::overwrite_existing);
  CHECK(open_manifest(model).tensors.size() == 188);
}

TEST_CASE("malformed TFLite input: each error names the file, the tensor, the field and the value") {
  TempDir dir;
  const fs::path hello = test::testdata() / "tflite" / "hello_world_float.tflite";
  const auto good = test::read_file(hello);

  SUBCASE("verifier failure: a truncated flatbuffer") {
    const fs::path path = dir / "truncated.tflite";
    test::write_file(path, std::span(good).first(1000));
    const Error e = error_of([&] { open_manifest(path); });
    CHECK(e.code() == ErrorCode::bad_input);
    CHECK(contains(e.what(), path.string()));
    CHECK(contains(e.what(), "fails verification"));
  }
  SUBCASE("bad identifier: not detected, and refused when forced") {
    auto bytes = good;
    std::memcpy(bytes.data() + 4, "XYZ\x01", 4);
    const fs::path path = dir / "other.bin";
    test::write_file(path, bytes);
    CHECK(error_of([&] { open_manifest(path); }).code() == ErrorCode::bad_input);  // nobody claims it
    const Error e = error_of([&] { open_manifest(path, OpenOptions{nullptr, "tflite"}); });
    CHECK(e.code() == ErrorCode::bad_input);
    CHECK(contains(e.what(), "file_identifier"));
    CHECK(contains(e.what(), "'XYZ\\x01'"));
  }
  SUBCASE("too short for a flatbuffer") {
    const fs::path path = dir / "short.tflite";
    test::write_file(path, std::string_view("TFL"));
    const Error e = error_of([&] { open_manifest(path); });
    CHECK(e.code() == ErrorCode::bad_input);
    CHECK(contains(e.what(), "too short"));
  }
  SUBCASE("buffer index out of range") {
    ModelSpec spec;
    spec.subgraphs.push_back({"main", {{"w", 0, {4}, 7}}});
    const Error e = error_of_model(dir, spec);
    CHECK(e.code() == ErrorCode::bad_input);
    CHECK(contains(e.what(), "tensor 'w'"));
    CHECK(contains(e.what(), "field buffer: index 7 is out of range (the model has 1 buffers)"));
  }
  SUBCASE("extended offset/size past the end of the file") {
    ModelSpec spec;
    spec.buffers.push_back(BufferSpec{{}, 4096, 16});
    spec.subgraphs.push_back({"main", {{"w", 0, {4}, 1}}});
    const Error e = error_of_model(dir, spec);
    CHECK(e.code() == ErrorCode::bad_input);
    CHECK(contains(e.what(), "tensor 'w': buffer 1 offset/size"));
    CHECK(contains(e.what(), "[4096, 4112) extend past the end of the file"));
  }
  SUBCASE("extended offset + size overflowing 64 bits") {
    ModelSpec spec;
    spec.buffers.push_back(BufferSpec{{}, std::numeric_limits<std::uint64_t>::max() - 7, 16});
    spec.subgraphs.push_back({"main", {{"w", 0, {4}, 1}}});
    const Error e = error_of_model(dir, spec);
    CHECK(e.code() == ErrorCode::bad_input);
    CHECK(contains(e.what(), "tensor 'w'"));
    CHECK(contains(e.what(), "overflows 64 bits"));
  }
  SUBCASE("extended data inside the flatbuffer instead of after it") {
    ModelSpec spec;
    spec.buffers.push_back(BufferSpec{{}, 8, 16});
    spec.subgraphs.push_back({"main", {{"w", 0, {4}, 1}}});
    const Error e = error_of_model(dir, spec);
    CHECK(e.code() == ErrorCode::bad_input);
    INFO(std::string(e.what()));
    CHECK(contains(e.what(), "tensor 'w': buffer 1 offset 8 lies inside the flatbuffer"));
  }
  SUBCASE("a buffer with both inline data and an extended offset") {
    ModelSpec spec;
    spec.buffers.push_back(BufferSpec{pattern(16, 0), 64, 16});
    spec.subgraphs.push_back({"main", {{"w", 0, {4}, 1}}});
    const Error e = error_of_model(dir, spec);
    CHECK(e.code() == ErrorCode::bad_input);
    CHECK(contains(e.what(), "buffer 1 has both inline data (16 bytes) and an extended offset 64"));
  }
  SUBCASE("dtype x shape differs from the buffer's length") {
    ModelSpec spec;
    spec.buffers.push_back(BufferSpec{pattern(36, 0)});
    spec.subgraphs.push_back({"main", {{"w", 0, {10}, 1}}});
    const Error e = error_of_model(dir, spec);
    CHECK(e.code() == ErrorCode::bad_input);
    CHECK(contains(e.what(), "tensor 'w': F32 × shape needs 40 bytes but the file stores 36"));
  }
  SUBCASE("a negative dimension") {
    ModelSpec spec;
    spec.buffers.push_back(BufferSpec{pattern(16, 0)});
    spec.subgraphs.push_back({"main", {{"w", 0, {-1, 4}, 1}}});
    const Error e = error_of_model(dir, spec);
    CHECK(e.code() == ErrorCode::bad_input);
    CHECK(contains(e.what(), "tensor 'w': shape has a negative dimension"));
  }
  SUBCASE("unknown TensorType, and RESOURCE holding data") {
    ModelSpec spec;
    spec.buffers.push_back(BufferSpec{pattern(16, 0)});
    spec.subgraphs.push_back({"main", {{"w", 100, {16}, 1}}});
    Error e = error_of_model(dir, spec);
    CHECK(e.code() == ErrorCode::bad_input);
    CHECK(contains(e.what(), "tensor 'w': field type: unknown TFLite TensorType 100"));
    spec.subgraphs[0].tensors[0].type = 13;
    e = error_of_model(dir, spec);
    CHECK(e.code() == ErrorCode::unsupported);
    CHECK(contains(e.what(), "RESOURCE"));
  }
  SUBCASE("per-channel quantization that does not match the shape") {
    ModelSpec spec;
    spec.buffers.push_back(BufferSpec{pattern(4, 0)});
    spec.subgraphs.push_back({"main", {{"w", 9, {2, 2}, 1, 0, {0.1f, 0.2f, 0.3f}, {0, 0, 0}, 0}}});
    Error e = error_of_model(dir, spec);
    CHECK(e.code() == ErrorCode::bad_input);
    CHECK(contains(e.what(), "tensor 'w': field quantization.scale has 3 entries but dimension 0 has size 2"));
    spec.subgraphs[0].tensors[0].axis = 5;
    e = error_of_model(dir, spec);
    CHECK(contains(e.what(), "field quantization.quantized_dimension: 5 is outside the tensor's rank 2"));
    spec.subgraphs[0].tensors[0] = {"w", 9, {2, 2}, 1, 0, {0.1f, 0.2f}, {0}, 1};
    e = error_of_model(dir, spec);
    CHECK(contains(e.what(), "field quantization.zero_point has 1 entries but quantization.scale has 2"));
  }
  SUBCASE("sparse tensors whose structure does not hold: each refused at open, naming the field") {
    const auto error_for = [&](const std::function<void(TensorSpec&)>& damage, std::int8_t type = 0) {
      ModelSpec spec;
      spec.buffers.push_back(BufferSpec{pattern(12, 0)});  // three float32 values
      TensorSpec t{"w", type, {3, 4}, 1};
      t.sparse = TensorSpec::Sparse{{0, 1}, {}, {{false, 3}, {true, 0, {0, 2, 2, 3}, {1, 3, 0}}}};
      damage(t);
      spec.subgraphs.push_back({"main", {t}});
      return error_of_model(dir, spec);
    };
    Error e = error_for([](TensorSpec& t) { t.sparse->levels[1].indices[1] = 4; });
    CHECK(e.code() == ErrorCode::bad_input);
    CHECK(contains(
        e.what(),
        "tensor 'w': field sparsity.dim_metadata[1].array_indices[1]: 4 is outside the level's 4 coordinates"));
    e = error_for([](TensorSpec& t) { t.sparse->levels[1].segments = {0, 2, 1, 3}; });
    CHECK(contains(e.what(), "field sparsity.dim_metadata[1].array_segments[2]: 1 is below the one before"));
    e = error_for([](TensorSpec& t) { t.sparse->levels[1].segments = {0, 2, 2}; });
    CHECK(contains(e.what(), "array_segments: 3 entries, the level above has 3 positions (needs one more)"));
    e = error_for([](TensorSpec& t) {
      t.sparse->levels[1].segments = {0, 2, 2, 4};
      t.sparse->levels[1].indices.push_back(2);
    });
    CHECK(contains(e.what(), "tensor 'w': its buffer holds 3 values but field sparsity places 4"));
    e = error_for([](TensorSpec& t) { t.sparse->levels[0].dense_size = 2; });
    CHECK(contains(e.what(), "field sparsity.dim_metadata[0].dense_size: 2, but the level has 3 coordinates"));
    e = error_for([](TensorSpec& t) { t.sparse->traversal_order = {0, 0}; });
    CHECK(contains(e.what(), "traversal_order[1]: 0 is not a permutation"));
    e = error_for([](TensorSpec& t) { t.sparse->levels[1].indices[0] = -1; });
    CHECK(contains(e.what(), "array_indices: -1 is negative"));
    e = error_for([](TensorSpec& t) { t.sparse->levels.pop_back(); });
    CHECK(contains(e.what(),
                   "field sparsity.traversal_order: 2 levels for a rank-2 tensor with 0 block dimensions and 1 "));
    e = error_for([](TensorSpec& t) {
      t.sparse->block_map = {1};
      t.sparse->traversal_order.push_back(2);
      t.sparse->levels.push_back({false, 3});
    });
    CHECK(contains(e.what(), "dim_metadata[2].dense_size: block size 3 does not divide dimension 1 (4)"));
    e = error_for([](TensorSpec&) {}, 17);  // INT4: sub-byte elements
    CHECK(e.code() == ErrorCode::unsupported);
    CHECK(contains(e.what(), "tensor 'w': sparse I4 tensors are not supported"));
  }
  SUBCASE("external buffers: missing file, escaping paths, unknown id, bad group, past the end") {
    ModelSpec spec;
    spec.groups = {"missing.bin"};
    spec.externals = {{1, 0, 0, 16, ""}};
    spec.subgraphs.push_back({"main", {{"w", 0, {4}, 0, 1}}});
    Error e = error_of_model(dir, spec);
    CHECK(e.code() == ErrorCode::bad_input);
    CHECK(contains(e.what(),
                   "tensor 'w': external buffer file '" + (dir / "missing.bin").string() + "' (group 0) is missing"));

    spec.groups = {"../outside.bin"};
    e = error_of_model(dir, spec);
    CHECK(e.code() == ErrorCode::bad_input);
    CHECK(contains(e.what(), "external_buffer_groups[0].name '../outside.bin' escapes the model folder"));
    spec.groups = {"/etc/passwd"};
    e = error_of_model(dir, spec);
    CHECK(contains(e.what(), "'/etc/passwd' must be a relative path inside the model folder"));

    test::write_file(dir / "w.bin", as_bytes(pattern(8, 0)));
    spec.groups = {"w.bin"};
    e = error_of_model(dir, spec);
    CHECK(contains(e.what(), (dir / "w.bin").string()));
    CHECK(contains(
        e.what(),
        "tensor 'w': external buffer 1 offset/length: bytes [0, 16) extend past the end of the file (8 bytes)"));

    spec.subgraphs[0].tensors[0].external_buffer = 2;
    e = error_of_model(dir, spec);
    CHECK(contains(e.what(), "tensor 'w': field external_buffer: id 2 is not in Model.external_buffers"));

    spec.subgraphs[0].tensors[0].external_buffer = 1;
    spec.externals[0].group = 4;
    e = error_of_model(dir, spec);
    CHECK(contains(e.what(), "tensor 'w': external buffer group 4 is out of range (the model has 1 groups)"));

    spec.externals[0].group = 0;
    spec.externals.push_back({1, 0, 0, 4, ""});
    e = error_of_model(dir, spec);
    CHECK(contains(e.what(), "Model.external_buffers: id 1 appears twice"));
  }
  SUBCASE("the CLI exits with 3 on bad input") {
    const char* exe = std::getenv("LWLOAD_EXE");
    if (!exe) return;
    const fs::path path = dir / "truncated.tflite";
    test::write_file(path, std::span(good).first(1000));
    CHECK(test::run_command(std::string(exe) + " inspect '" + path.string() + "' 2>/dev/null") == 3);
  }
}

TEST_CASE("a tensor table stored inside a large buffer's data is refused, never read as zeros") {
  // flatc reads the table's real bytes (INT32, buffer 2); a snapshot without the buffer's data would
  // read zeros (FLOAT32, no buffer: no tensor at all). lwload refuses the two readings.
  TempDir dir;
  ModelSpec spec;
  spec.buffers.push_back(BufferSpec{std::vector<std::uint8_t>(8192, 0x11)});
  spec.buffers.push_back(BufferSpec{{1, 0, 0, 0}});
  spec.subgraphs.push_back({"main", {{"w", 2, {}, 2}}});
  auto bytes = build_tflite(spec);
  auto* base = reinterpret_cast<std::uint8_t*>(bytes.data());
  const auto* model = tfl::GetModel(base);
  auto* payload = const_cast<std::uint8_t*>(model->buffers()->Get(1)->data()->Data());
  auto* slot =
      const_cast<std::uint8_t*>(reinterpret_cast<const std::uint8_t*>(model->subgraphs()->Get(0)->tensors()->Data()));
  // A Tensor of scalar fields only (type INT32, buffer 2): its vtable, then the table, 64 bytes in.
  std::uint8_t* vtable = payload + 64;
  const std::uint16_t vt[5] = {10, 12, 0, 8, 4};  // vtable size, table size, shape (absent), type, buffer
  std::memcpy(vtable, vt, sizeof vt);
  std::uint8_t* table = vtable + 12;
  const std::int32_t soffset = 12;
  const std::uint32_t buffer = 2;
  std::memcpy(table, &soffset, 4);
  std::memcpy(table + 4, &buffer, 4);
  table[8] = 2;  // INT32
  const auto relative = static_cast<std::uint32_t>(table - slot);
  std::memcpy(slot, &relative, 4);
  // The real reading, through the generated code over the whole file.
  flatbuffers::Verifier verifier(base, bytes.size());
  REQUIRE(tfl::VerifyModelBuffer(verifier));
  const auto* tensor = tfl::GetModel(base)->subgraphs()->Get(0)->tensors()->Get(0);
  REQUIRE(tensor->type() == tfl::TensorType_INT32);
  REQUIRE(tensor->buffer() == 2);
  const fs::path path = dir / "inside.tflite";
  test::write_file(path, bytes);
  const Error e = error_of([&] { open_manifest(path); });
  CHECK(e.code() == ErrorCode::bad_input);
  INFO(std::string(e.what()));
  CHECK(contains(e.what(), "the flatbuffer's Tensor at offset"));
  CHECK(contains(e.what(), "lies inside the data of a buffer"));
}

TEST_CASE("a quantization table stored inside a large buffer's data is refused") {
  TempDir dir;
  ModelSpec spec;
  spec.buffers.push_back(BufferSpec{std::vector<std::uint8_t>(8192, 0)});
  spec.buffers.push_back(BufferSpec{{1, 2, 3, 4}});
  spec.subgraphs.push_back({"main", {{"q", 9, {4}, 2, 0, {0.5f}, {0}}}});
  auto bytes = build_tflite(spec);
  auto* base = reinterpret_cast<std::uint8_t*>(bytes.data());
  const auto* model = tfl::GetModel(base);
  auto* payload = const_cast<std::uint8_t*>(model->buffers()->Get(1)->data()->Data());
  const auto* tensor = model->subgraphs()->Get(0)->tensors()->Get(0);
  // Move the scale vector (one float, 0.5) into the payload and point the table at it.
  const auto* q = tensor->quantization();
  auto* field = const_cast<std::uint8_t*>(reinterpret_cast<const std::uint8_t*>(q) +
                                          static_cast<const flatbuffers::Table*>(static_cast<const void*>(q))
                                              ->GetOptionalFieldOffset(tfl::QuantizationParameters::VT_SCALE));
  std::uint8_t* vector = payload + 128;
  const std::uint32_t count = 1;
  const float half = 0.5f;
  std::memcpy(vector, &count, 4);
  std::memcpy(vector + 4, &half, 4);
  const auto relative = static_cast<std::uint32_t>(vector - field);
  std::memcpy(field, &relative, 4);
  flatbuffers::Verifier verifier(base, bytes.size());
  REQUIRE(tfl::VerifyModelBuffer(verifier));
  REQUIRE(tfl::GetModel(base)->subgraphs()->Get(0)->tensors()->Get(0)->quantization()->scale()->Get(0) == 0.5f);
  const fs::path path = dir / "scale_inside.tflite";
  test::write_file(path, bytes);
  const Error e = error_of([&] { open_manifest(path); });
  CHECK(e.code() == ErrorCode::bad_input);
  INFO(std::string(e.what()));
  CHECK(contains(e.what(), "QuantizationParameters.scale"));
}

TEST_CASE("a vector that starts outside a large buffer's data and reaches into it is refused") {
  // Tensor.shape moved into a small buffer's data (read with the tables), its length running on
  // over the next Buffer table into the large payload the snapshot leaves out: flatc reads the
  // payload's bytes as dimensions, a snapshot would read zeros. Only the vector's end is inside.
  TempDir dir;
  ModelSpec spec;
  spec.buffers.push_back(BufferSpec{std::vector<std::uint8_t>(8192, 0x11)});  // 1: left unread
  spec.buffers.push_back(BufferSpec{pattern(64, 3)});                         // 2: read
  spec.subgraphs.push_back({"main", {{"w", 3, {64}, 2}}});
  auto bytes = build_tflite(spec);
  auto* base = reinterpret_cast<std::uint8_t*>(bytes.data());
  const auto* model = tfl::GetModel(base);
  auto* small = const_cast<std::uint8_t*>(model->buffers()->Get(2)->data()->Data());
  const std::uint8_t* large = model->buffers()->Get(1)->data()->Data();
  REQUIRE(small < large);  // the builder writes back to front: buffer 2's data comes first
  REQUIRE(reinterpret_cast<std::uintptr_t>(small) % 4 == 0);
  const auto* tensor = model->subgraphs()->Get(0)->tensors()->Get(0);
  auto* field = const_cast<std::uint8_t*>(reinterpret_cast<const std::uint8_t*>(tensor) +
                                          static_cast<const flatbuffers::Table*>(static_cast<const void*>(tensor))
                                              ->GetOptionalFieldOffset(tfl::Tensor::VT_SHAPE));
  // 16 bytes (4 dimensions) past the start of the large payload.
  const auto count = static_cast<std::uint32_t>((large - small - 4) / 4 + 4);
  std::memcpy(small, &count, 4);
  const auto relative = static_cast<std::uint32_t>(small - field);
  std::memcpy(field, &relative, 4);
  flatbuffers::Verifier verifier(base, bytes.size());
  REQUIRE(tfl::VerifyModelBuffer(verifier));
  const auto* shape = tfl::GetModel(base)->subgraphs()->Get(0)->tensors()->Get(0)->shape();
  REQUIRE(shape->size() == count);
  REQUIRE(shape->Get(count - 1) == 0x11111111);  // flatc's reading: the payload's bytes
  const fs::path path = dir / "reaching.tflite";
  test::write_file(path, bytes);
  const Error e = error_of([&] { open_manifest(path); });
  CHECK(e.code() == ErrorCode::bad_input);
  INFO(std::string(e.what()));
  CHECK(contains(e.what(), "the flatbuffer's Tensor.shape at offset"));
  CHECK(contains(e.what(), "lies inside the data of a buffer"));
}

TEST_CASE("TFLite Micro's rank-1 per-channel bias (quantized_dimension 3) loads with axis 0, said in the metadata") {
  // As TOCO wrote person_detect.tflite: a bias of 3 channels, 3 scales, quantized_dimension 3.
  TempDir dir;
  ModelSpec spec;
  spec.buffers.push_back(BufferSpec{pattern(12, 1)});
  spec.buffers.push_back(BufferSpec{pattern(4 * 3 * 3 * 2, 2)});
  spec.subgraphs.push_back({"main",
                            {{"bias", 2, {3}, 1, 0, {0.5f, 0.25f, 0.125f}, {0, 0, 0}, 3},
                             {"filter", 9, {4, 3, 3, 2}, 2, 0, {0.5f, 0.25f}, {0, 0}, 3}}});
  const fs::path path = dir / "micro.tflite";
  test::write_file(path, build_tflite(spec));
  const Manifest m = open_manifest(path);
  const TensorInfo* bias = m.find("bias");
  REQUIRE(bias);
  REQUIRE(bias->quantization);
  CHECK(bias->quantization->axis == 0);
  CHECK(bias->quantization->scale == std::vector<double>{0.5, 0.25, 0.125});
  const MetaValue* said = metadata(m, "tflite.quantized_dimension_taken_as_0.bias");
  REQUIRE(said);
  CHECK(std::get<std::int64_t>(said->value) == 3);
  CHECK(m.find("filter")->quantization->axis == 3);  // in range: as written
  CHECK_FALSE(metadata(m, "tflite.quantized_dimension_taken_as_0.filter"));
  // A rank-1 tensor whose scale count is not its length is still refused.
  ModelSpec wrong;
  wrong.buffers.push_back(BufferSpec{pattern(16, 1)});
  wrong.subgraphs.push_back({"main", {{"bias", 2, {4}, 1, 0, {0.5f, 0.25f, 0.125f}, {}, 3}}});
  const Error e = error_of_model(dir, wrong);
  CHECK(e.code() == ErrorCode::bad_input);
  CHECK(contains(e.what(), "quantized_dimension"));
}
