// safetensors reader: the reference samples (checked against an independent parse in this file and
// the values the reference writer stored), generated multi-tensor and sharded models, headers-only
// reading, each malformed-input class, and `lwload inspect --json` on top of it.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <boost/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "lwload/backend.hpp"
#include "lwload/error.hpp"
#include "lwload/loader.hpp"
#include "lwload/manifest.hpp"
#include "lwload/memory_file_system.hpp"
#include "support/test_support.hpp"
#include "synth/synth.hpp"

using namespace lwload;
using namespace lwload::test;
namespace fs = std::filesystem;

namespace {

std::uint64_t le64_at(const std::vector<std::byte>& bytes, std::size_t at) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < 8; ++i) v |= std::uint64_t(std::to_integer<std::uint8_t>(bytes[at + i])) << (8 * i);
  return v;
}

// A safetensors file assembled by hand: header text as given (no validation here), then `data`.
std::vector<std::byte> safetensors_bytes(std::string_view header, const std::vector<std::byte>& data) {
  std::vector<std::byte> out;
  put_u64(out, header.size());
  put_bytes(out, header);
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

// Concatenated bytes of a tensor's pieces, read straight from the files.
std::vector<std::byte> tensor_data(const Manifest& m, const TensorInfo& t) {
  std::vector<std::byte> out;
  for (const Piece& p : t.pieces) {
    const auto part = read_range(m.files.at(p.file), p.offset, p.length);
    out.insert(out.end(), part.begin(), part.end());
  }
  return out;
}

// The error message open_manifest gives for `bytes` written as `name` (bad_input required).
std::string bad_input_message(const std::vector<std::byte>& bytes, const char* name = "bad.safetensors") {
  TempDir dir;
  write_file(dir / name, bytes);
  try {
    open_manifest(dir / name);
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::bad_input);
    return e.what();
  }
  FAIL("no error for malformed input");
  return {};
}

std::string bad_input_message(std::string_view header, std::size_t data_bytes) {
  return bad_input_message(safetensors_bytes(header, counting_bytes(data_bytes)));
}

// Decodes element i of a sample tensor as a double (the samples hold -3..2 in every dtype).
double element(DType dtype, const std::vector<std::byte>& data, std::size_t i) {
  auto load = [&](auto zero) {
    decltype(zero) v;
    std::memcpy(&v, data.data() + i * sizeof v, sizeof v);
    return v;
  };
  switch (dtype) {
    case DType::U8: return static_cast<std::int8_t>(load(std::uint8_t{}));  // stored as wrapped -3..2
    case DType::U16: return static_cast<std::int16_t>(load(std::uint16_t{}));
    case DType::U32: return static_cast<std::int32_t>(load(std::uint32_t{}));
    case DType::I8: return load(std::int8_t{});
    case DType::I16: return load(std::int16_t{});
    case DType::I32: return load(std::int32_t{});
    case DType::F32: return load(float{});
    case DType::F64: return load(double{});
    case DType::F16: {
      // The samples' halves are small integers: decode sign/exponent/mantissa exactly.
      const std::uint16_t h = load(std::uint16_t{});
      const int exponent = (h >> 10) & 0x1f;
      const double mantissa = (h & 0x3ff) / 1024.0;
      const double magnitude =
          exponent == 0 ? mantissa * std::ldexp(1.0, -14) : (1 + mantissa) * std::ldexp(1.0, exponent - 15);
      return (h & 0x8000) ? -magnitude : magnitude;
    }
    default: FAIL("unexpected dtype"); return 0;
  }
}

}  // namespace

TEST_CASE("every reference sample: name, dtype, shape, offset and the stored values") {
  // The reference writer's samples: one tensor named after the file, values -3..2, __metadata__ test=a.
  const std::map<std::string, DType> expected_dtype{{"B", DType::U8},  {"H", DType::U16}, {"I", DType::U32},
                                                    {"b", DType::I8},  {"d", DType::F64}, {"e", DType::F16},
                                                    {"f", DType::F32}, {"h", DType::I16}, {"i", DType::I32}};
  std::size_t seen = 0;
  for (const auto& entry : fs::directory_iterator(testdata() / "safetensors")) {
    const fs::path path = entry.path();
    CAPTURE(path);
    const std::string stem = path.stem().string();
    REQUIRE(expected_dtype.count(stem));
    ++seen;

    // Independent parse: the header length and the header's own data_offsets.
    const auto file = read_file(path);
    const std::uint64_t header_len = le64_at(file, 0);
    const std::string header_text(reinterpret_cast<const char*>(file.data() + 8), header_len);
    const auto header = boost::json::parse(header_text).as_object();
    const auto& offsets = header.at(stem).at("data_offsets").as_array();

    const Manifest m = open_manifest(path);
    CHECK(m.format == "safetensors");
    REQUIRE(m.files.size() == 1);
    CHECK(m.files[0] == path);
    REQUIRE(m.tensors.size() == 1);
    const TensorInfo& t = m.tensors[0];
    CHECK(t.name == stem);
    CHECK(t.dtype == expected_dtype.at(stem));
    CHECK(dtype_name(t.dtype) == std::string_view(header.at(stem).at("dtype").as_string()));
    CHECK(t.shape == std::vector<std::int64_t>{6});
    REQUIRE(t.pieces.size() == 1);
    CHECK(t.pieces[0].file == 0);
    CHECK(t.pieces[0].offset == 8 + header_len + offsets[0].to_number<std::uint64_t>());
    CHECK(t.pieces[0].length == offsets[1].to_number<std::uint64_t>() - offsets[0].to_number<std::uint64_t>());
    CHECK(t.bytes == 6 * dtype_bytes(t.dtype, 1).value());
    CHECK(t.pieces[0].offset + t.pieces[0].length == file.size());

    const auto data = tensor_data(m, t);
    for (std::size_t i = 0; i < 6; ++i) CHECK(element(t.dtype, data, i) == static_cast<double>(i) - 3);

    REQUIRE(m.metadata.size() == 1);
    CHECK(m.metadata[0].key == "test");
    CHECK(std::get<std::string>(m.metadata[0].value.value) == "a");
  }
  CHECK(seen == expected_dtype.size());
}

TEST_CASE("tensors come out in file order whatever the JSON order; zero-size tensors and all dtypes") {
  TempDir dir;
  // JSON lists c, a, b; the data region holds a (F32 2x3), empty (F16 [0]), b (BF16 4), c (U8 5).
  const std::string header =
      R"({"c":{"dtype":"U8","shape":[5],"data_offsets":[32,37]},)"
      R"("a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},)"
      R"("empty":{"dtype":"F16","shape":[0],"data_offsets":[24,24]},)"
      R"("b":{"dtype":"BF16","shape":[4],"data_offsets":[24,32]},)"
      R"("__metadata__":{"format":"pt","note":"hello"}}  )";  // trailing spaces: the writer's padding
  const auto data = counting_bytes(37);
  write_file(dir / "model.bin", safetensors_bytes(header, data));  // detection is by content
  const Manifest m = open_manifest(dir / "model.bin");
  CHECK(m.format == "safetensors");
  REQUIRE(m.tensors.size() == 4);
  CHECK(m.tensors[0].name == "a");
  CHECK(m.tensors[1].name == "empty");
  CHECK(m.tensors[2].name == "b");
  CHECK(m.tensors[3].name == "c");
  CHECK(m.tensors[1].bytes == 0);
  CHECK(m.tensors[2].dtype == DType::BF16);
  const std::uint64_t data_start = 8 + header.size();
  CHECK(m.tensors[3].pieces[0].offset == data_start + 32);
  CHECK(tensor_data(m, m.tensors[3]) == std::vector<std::byte>(data.begin() + 32, data.end()));
  CHECK(m.total_bytes() == 37);
  REQUIRE(m.metadata.size() == 2);

  // Every safetensors dtype maps to its canonical name.
  for (const char* name : {"F64", "F32", "F16", "BF16", "I64", "I32", "I16", "I8", "U64", "U32", "U16", "U8", "BOOL",
                           "F8_E4M3", "F8_E5M2", "C64"}) {
    CAPTURE(name);
    const DType type = dtype_from_name(name).value();
    const std::uint64_t bytes = dtype_bytes(type, 2).value();
    const std::string h = std::string(R"({"x":{"dtype":")") + name + R"(","shape":[2],"data_offsets":[0,)" +
                          std::to_string(bytes) + "]}}";
    write_file(dir / "one.safetensors", safetensors_bytes(h, counting_bytes(bytes)));
    const Manifest one = open_manifest(dir / "one.safetensors");
    CHECK(one.tensors.at(0).dtype == type);
  }
}

TEST_CASE("opening reads the header only: reads past the data start would fail") {
  const std::string header =
      R"({"w":{"dtype":"F32","shape":[1024,256],"data_offsets":[0,1048576]},"v":{"dtype":"U8","shape":[3],"data_offsets":[1048576,1048579]}})";
  auto fs = std::make_shared<MemoryFileSystem>();
  fs->add_file("m.safetensors", safetensors_bytes(header, counting_bytes(1048579)));
  fs->fail_reads_from("m.safetensors", 8 + header.size());
  OpenOptions options;
  options.file_system = fs;
  const Manifest m = open_manifest("m.safetensors", options);
  REQUIRE(m.tensors.size() == 2);
  CHECK(m.tensors[0].bytes == 1048576);
  CHECK(m.files.at(0) == "m.safetensors");
}

namespace {

// Writes a 3-shard model + index under `dir`; returns the tensors' expected contents.
std::map<std::string, std::vector<std::byte>> write_sharded(const fs::path& dir) {
  std::map<std::string, std::vector<std::byte>> contents;
  const auto a = counting_bytes(16, 1), b = counting_bytes(8, 50), c = counting_bytes(12, 100),
             d = counting_bytes(4, 200);
  contents = {{"layer.0.w", a}, {"layer.0.b", b}, {"layer.1.w", c}, {"head", d}};
  auto cat = [](std::vector<std::byte> x, const std::vector<std::byte>& y) {
    x.insert(x.end(), y.begin(), y.end());
    return x;
  };
  write_file(dir / "model-00001-of-00003.safetensors",
             safetensors_bytes(
                 R"({"__metadata__":{"format":"pt"},"layer.0.w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},)"
                 R"("layer.0.b":{"dtype":"F16","shape":[4],"data_offsets":[16,24]}})",
                 cat(a, b)));
  write_file(dir / "model-00002-of-00003.safetensors",
             safetensors_bytes(R"({"layer.1.w":{"dtype":"I32","shape":[3],"data_offsets":[0,12]}})", c));
  write_file(dir / "model-00003-of-00003.safetensors",
             safetensors_bytes(R"({"head":{"dtype":"U8","shape":[2,2],"data_offsets":[0,4]}})", d));
  write_file(dir / "model.safetensors.index.json",
             R"({"metadata":{"total_size":40},"weight_map":{"head":"model-00003-of-00003.safetensors",)"
             R"("layer.0.b":"model-00001-of-00003.safetensors","layer.0.w":"model-00001-of-00003.safetensors",)"
             R"("layer.1.w":"./model-00002-of-00003.safetensors"}})");
  return contents;
}

// Restores the working directory on scope exit (for relative-path cases).
struct WorkingDirectory {
  explicit WorkingDirectory(const fs::path& dir) : saved(fs::current_path()) { fs::current_path(dir); }
  ~WorkingDirectory() { fs::current_path(saved); }
  fs::path saved;
};

}  // namespace

TEST_CASE("a sharded model packed in one container (an APK's assets), opened by descriptor with a resolver") {
  TempDir dir;
  const auto contents = write_sharded(dir.path());
  // The index and the three shards one after another at odd offsets, as a packager stores them.
  std::vector<std::byte> container(3, std::byte{0xee});
  std::map<std::string, FileRange> ranges;
  for (const std::string name : {"model.safetensors.index.json", "model-00001-of-00003.safetensors",
                                 "model-00002-of-00003.safetensors", "model-00003-of-00003.safetensors"}) {
    const auto bytes = test::read_file(dir / name);
    ranges[name] = {-1, container.size(), bytes.size()};
    container.insert(container.end(), bytes.begin(), bytes.end());
    container.resize(container.size() + 5, std::byte{0xdd});
  }
  write_file(dir / "app.apk", container);
  const int fd = ::open((dir / "app.apk").c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  OpenOptions options;
  std::vector<std::string> asked;
  options.resolve = [&](const fs::path& name) -> std::optional<FileRange> {
    asked.push_back(name.string());
    const auto it = ranges.find(name.filename().string());
    if (it == ranges.end()) return std::nullopt;
    FileRange r = it->second;
    r.fd = fd;
    return r;
  };
  const FileRange& index = ranges.at("model.safetensors.index.json");
  const Manifest m = open_manifest_fd(fd, index.offset, index.length, options);
  ::close(fd);
  CAPTURE(asked.size());
  REQUIRE(m.files.size() == 3);
  REQUIRE(m.tensors.size() == 4);
  const auto device = open_device("host");
  const Weights w = load(m, *device);
  for (const TensorHandle& h : w.tensors()) {
    CAPTURE(h.info->name);
    std::vector<std::byte> got(h.bytes);
    w.read_back(h, 0, got);
    CHECK(got == contents.at(h.info->name));
  }
  CHECK(verify(w).tensors == 4);

  // Without a resolver the index is refused, naming the shard it needs.
  const int again = ::open((dir / "app.apk").c_str(), O_RDONLY | O_CLOEXEC);
  const Error e = error_of([&] { (void)open_manifest_fd(again, index.offset, index.length); });
  ::close(again);
  CHECK(e.code() == ErrorCode::bad_input);  // the shard it needs is missing: named, with the tensor
  CHECK(std::string(e.what()).find("model-00001-of-00003.safetensors") != std::string::npos);
}

TEST_CASE("sharded model through its index file or its folder: every shard's tensors, bytes checked") {
  TempDir dir;
  const auto contents = write_sharded(dir.path());
  for (const fs::path& input : {dir / "model.safetensors.index.json", dir.path()}) {
    CAPTURE(input);
    const Manifest m = open_manifest(input);
    CHECK(m.format == "safetensors");
    REQUIRE(m.files.size() == 3);
    CHECK(m.files[0] == dir / "model-00001-of-00003.safetensors");
    CHECK(m.files[1] == dir / "model-00002-of-00003.safetensors");
    CHECK(m.files[2] == dir / "model-00003-of-00003.safetensors");
    REQUIRE(m.tensors.size() == 4);
    CHECK(m.tensors[0].name == "layer.0.w");  // shard order, then file order inside each shard
    CHECK(m.tensors[1].name == "layer.0.b");
    CHECK(m.tensors[2].name == "layer.1.w");
    CHECK(m.tensors[3].name == "head");
    for (const auto& t : m.tensors) {
      CAPTURE(t.name);
      CHECK(tensor_data(m, t) == contents.at(t.name));
    }
    CHECK(m.tensors[2].pieces[0].file == 1);
    CHECK(m.tensors[2].dtype == DType::I32);
    CHECK(m.total_bytes() == 40);
    const auto total =
        std::find_if(m.metadata.begin(), m.metadata.end(), [](const MetaEntry& e) { return e.key == "total_size"; });
    REQUIRE(total != m.metadata.end());
    CHECK(std::get<std::int64_t>(total->value.value) == 40);
  }

  // A relative input gives relative shard paths (as opened).
  WorkingDirectory cwd(dir.path());
  const Manifest rel = open_manifest("model.safetensors.index.json");
  REQUIRE(rel.files.size() == 3);
  CHECK(rel.files[0] == "model-00001-of-00003.safetensors");
  CHECK(rel.files[0].is_relative());
}

TEST_CASE("sharded model errors: missing shard, escaping path, tensor absent from its shard, duplicates") {
  TempDir dir;
  write_sharded(dir.path());
  auto message_for = [&](const std::string& index) {
    write_file(dir / "model.safetensors.index.json", index);
    try {
      open_manifest(dir / "model.safetensors.index.json");
    } catch (const Error& e) {
      CHECK(e.code() == ErrorCode::bad_input);
      return std::string(e.what());
    }
    FAIL("no error");
    return std::string();
  };
  std::string msg =
      message_for(R"({"weight_map":{"head":"model-00003-of-00003.safetensors","extra":"gone.safetensors"}})");
  CHECK(msg.find("shard 'gone.safetensors'") != std::string::npos);
  CHECK(msg.find("tensor 'extra'") != std::string::npos);
  CHECK(msg.find("missing") != std::string::npos);

  msg = message_for(R"({"weight_map":{"head":"../outside.safetensors"}})");
  CHECK(msg.find("escapes the model folder") != std::string::npos);
  CHECK(msg.find("'head'") != std::string::npos);
  msg = message_for(R"({"weight_map":{"head":"/etc/passwd"}})");
  CHECK(msg.find("must be a relative path") != std::string::npos);

  msg = message_for(
      R"({"weight_map":{"head":"model-00003-of-00003.safetensors","ghost":"model-00002-of-00003.safetensors"}})");
  CHECK(msg.find("tensor 'ghost'") != std::string::npos);
  CHECK(msg.find("does not contain it") != std::string::npos);

  // The same tensor name in two shards is ambiguous.
  write_file(dir / "model-00004-of-00003.safetensors",
             safetensors_bytes(R"({"head":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})", counting_bytes(4)));
  msg = message_for(
      R"({"weight_map":{"head":"model-00003-of-00003.safetensors","x":"model-00004-of-00003.safetensors"}})");
  CHECK(msg.find("'head' is stored in two shards") != std::string::npos);

  msg = message_for(R"({"weights":{}})");
  CHECK(msg.find("missing field 'weight_map'") != std::string::npos);
  msg = message_for(R"({"weight_map":{"head":7}})");
  CHECK(msg.find("expected a string") != std::string::npos);
  msg = message_for(R"({"weight_map":{"head":"model-00003-of-00003.safetensors",}})");
  CHECK(msg.find("malformed JSON at byte") != std::string::npos);

  // A shard's own error names the shard file.
  write_file(
      dir / "model-00002-of-00003.safetensors",
      safetensors_bytes(R"({"layer.1.w":{"dtype":"I32","shape":[3],"data_offsets":[0,16]}})", counting_bytes(16)));
  msg = message_for(R"({"weight_map":{"layer.1.w":"model-00002-of-00003.safetensors"}})");
  CHECK(msg.find("model-00002-of-00003.safetensors: tensor 'layer.1.w'") != std::string::npos);
}

TEST_CASE("malformed single files: each class gives bad_input naming file, tensor, field and value") {
  SUBCASE("truncated before the header length") {
    const std::string msg = bad_input_message(counting_bytes(5));
    CHECK(msg.find("bad.safetensors") != std::string::npos);
    CHECK(msg.find("truncated: 5 bytes") != std::string::npos);
  }
  SUBCASE("header length beyond the 100 MB limit") {
    std::vector<std::byte> bytes;
    put_u64(bytes, 200'000'000);
    put_bytes(bytes, "{}");
    const std::string msg = bad_input_message(bytes);
    CHECK(msg.find("header length 200000000 exceeds the limit of 100000000 bytes") != std::string::npos);
  }
  SUBCASE("header length beyond the file (truncated header)") {
    std::vector<std::byte> bytes;
    put_u64(bytes, 1000);
    put_bytes(bytes, R"({"w":{"dtype":"F32")");
    const std::string msg = bad_input_message(bytes);
    CHECK(msg.find("header length 1000 exceeds the file") != std::string::npos);
    CHECK(msg.find("27 bytes") != std::string::npos);
  }
  SUBCASE("malformed JSON: Boost.JSON's message and the byte position") {
    const std::string msg = bad_input_message(R"({"w":{"dtype":"F32" "shape":[1]}})", 4);
    CHECK(msg.find("header: malformed JSON at byte 28 of the file: syntax error") != std::string::npos);
  }
  SUBCASE("header is not an object") {
    CHECK(bad_input_message("[1, 2]", 0).find("header: expected a JSON object") != std::string::npos);
  }
  SUBCASE("offsets past the end of the file") {
    const std::string msg = bad_input_message(R"({"w":{"dtype":"U8","shape":[64],"data_offsets":[0,64]}})", 16);
    CHECK(msg.find("tensor 'w' field 'data_offsets' [0, 64]") != std::string::npos);
    CHECK(msg.find("past the end of the file") != std::string::npos);
  }
  SUBCASE("offset + length overflows 64 bits") {
    const std::string msg = bad_input_message(
        R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[18446744073709551614,18446744073709551615]}})", 1);
    CHECK(msg.find("tensor 'w' field 'data_offsets'") != std::string::npos);
    CHECK(msg.find("overflows 64 bits") != std::string::npos);
  }
  SUBCASE("end before begin") {
    const std::string msg = bad_input_message(R"({"w":{"dtype":"U8","shape":[0],"data_offsets":[4,2]}})", 4);
    CHECK(msg.find("[4, 2] ends before it begins") != std::string::npos);
  }
  SUBCASE("hole between tensors") {
    const std::string msg = bad_input_message(
        R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},"b":{"dtype":"U8","shape":[4],"data_offsets":[6,10]}})",
        10);
    CHECK(msg.find("hole in the data region: bytes [4, 6) before tensor 'b'") != std::string::npos);
  }
  SUBCASE("overlapping tensors") {
    const std::string msg = bad_input_message(
        R"({"a":{"dtype":"U8","shape":[6],"data_offsets":[0,6]},"b":{"dtype":"U8","shape":[4],"data_offsets":[4,8]}})",
        8);
    CHECK(msg.find("tensor 'b' data_offsets [4, 8] overlap tensor 'a' [0, 6]") != std::string::npos);
  }
  SUBCASE("data region not covered to its end") {
    const std::string msg = bad_input_message(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})", 9);
    CHECK(msg.find("the data region has 9 bytes but its tensors cover 4") != std::string::npos);
  }
  SUBCASE("dtype x shape differs from the byte length") {
    const std::string msg = bad_input_message(R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,20]}})", 20);
    CHECK(msg.find("tensor 'w': F32 × shape needs 24 bytes but the file stores 20") != std::string::npos);
  }
  SUBCASE("unknown dtype") {
    const std::string msg = bad_input_message(R"({"w":{"dtype":"F4","shape":[2],"data_offsets":[0,1]}})", 1);
    CHECK(msg.find("tensor 'w': unknown dtype 'F4'") != std::string::npos);
  }
  SUBCASE("wrong field types and missing fields") {
    CHECK(bad_input_message(R"({"w":{"dtype":"U8","shape":[-1],"data_offsets":[0,1]}})", 1)
              .find("tensor 'w' field 'shape': expected a non-negative integer below 2^64, found -1") !=
          std::string::npos);
    CHECK(bad_input_message(R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1,2]}})", 1)
              .find("expected [begin, end], found 3 values") != std::string::npos);
    CHECK(bad_input_message(R"({"w":{"dtype":"U8","data_offsets":[0,1]}})", 1)
              .find("tensor 'w': missing field 'shape'") != std::string::npos);
    CHECK(bad_input_message(R"({"__metadata__":{"k":1}})", 0).find("__metadata__ field 'k': expected a string") !=
          std::string::npos);
  }
  SUBCASE("shape whose element count overflows") {
    const std::string msg =
        bad_input_message(R"({"w":{"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[0,1]}})", 1);
    CHECK(msg.find("tensor 'w'") != std::string::npos);
    CHECK(msg.find("overflows 64 bits") != std::string::npos);
  }
}

TEST_CASE("header length bounds: exactly size - 8 opens, size - 8 + 1 (and beyond) is refused by the bound") {
  // A header that fills the file to its last byte: no data region, a zero-byte tensor.
  const std::string header = R"({"w":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}})";
  {
    TempDir dir;
    write_file(dir / "exact.safetensors", safetensors_bytes(header, {}));
    const Manifest m = open_manifest(dir / "exact.safetensors");
    REQUIRE(m.tensors.size() == 1);
    CHECK(m.tensors[0].bytes == 0);
    CHECK(m.tensors[0].pieces.at(0).offset == 8 + header.size());
    // Forced as well as detected: detection applies the same bound.
    OpenOptions forced;
    forced.format = "safetensors";
    CHECK(open_manifest(dir / "exact.safetensors", forced).tensors.size() == 1);
  }
  // The stored length one byte (then 2..8 bytes) past the file: the bound's own message, not a
  // read error further on.
  for (std::uint64_t over = 1; over <= 8; ++over) {
    INFO("over by " << over);
    std::vector<std::byte> bytes = safetensors_bytes(header, {});
    const std::uint64_t claimed = header.size() + over;
    for (std::size_t i = 0; i < 8; ++i) bytes[i] = std::byte(static_cast<std::uint8_t>(claimed >> (8 * i)));
    TempDir dir;
    write_file(dir / "over.safetensors", bytes);
    OpenOptions forced;
    forced.format = "safetensors";
    const Error e = error_of([&] { open_manifest(dir / "over.safetensors", forced); });
    CHECK(e.code() == ErrorCode::bad_input);
    CHECK(std::string(e.what()).find(str("header length ", claimed, " exceeds the file (truncated? the file has ",
                                         bytes.size(), " bytes)")) != std::string::npos);
  }
}

TEST_CASE("files that are not safetensors are not claimed by content") {
  TempDir dir;
  // A header length that does not fit the file and no .safetensors extension: not recognised.
  std::vector<std::byte> bytes;
  put_u64(bytes, 1u << 30);
  put_bytes(bytes, "{}");
  write_file(dir / "blob.bin", bytes);
  CHECK_THROWS_WITH_AS(open_manifest(dir / "blob.bin"), doctest::Contains("not a model lwload recognises"), Error);
  // An empty folder holds no model.
  fs::create_directory(dir / "empty");
  CHECK_THROWS_AS(open_manifest(dir / "empty"), Error);
}

TEST_CASE("lwload inspect --json prints the manifest object; exit 3 on a malformed file") {
  const fs::path sample = testdata() / "safetensors" / "f.safetensors";
  std::string out;
  REQUIRE(run_lwload("inspect --json '" + sample.string() + "'", &out) == 0);
  const auto root = boost::json::parse(out).as_object();
  CHECK(root.at("format").as_string() == "safetensors");
  CHECK(root.at("files").as_array().size() == 1);
  CHECK(root.at("files").as_array()[0].as_string() == sample.string());
  CHECK(root.at("total_bytes").to_number<std::uint64_t>() == 24);
  const auto& tensors = root.at("tensors").as_array();
  REQUIRE(tensors.size() == 1);
  const auto& t = tensors[0].as_object();
  CHECK(t.at("name").as_string() == "f");
  CHECK(t.at("dtype").as_string() == "F32");
  CHECK(t.at("shape").as_array() == boost::json::array{6});
  CHECK(t.at("bytes").to_number<std::uint64_t>() == 24);
  CHECK(t.at("quantization").is_null());
  const auto& pieces = t.at("pieces").as_array();
  REQUIRE(pieces.size() == 1);
  CHECK(pieces[0].at("file").to_number<int>() == 0);
  CHECK(pieces[0].at("offset").to_number<std::uint64_t>() == 8 + 83);
  CHECK(pieces[0].at("length").to_number<std::uint64_t>() == 24);

  TempDir dir;
  write_file(dir / "bad.safetensors",
             safetensors_bytes(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", counting_bytes(4)));
  CHECK(run_lwload("inspect --json '" + (dir / "bad.safetensors").string() + "'", &out) == 3);
}

TEST_CASE(
    "every safetensors file in testdata and synthetic ones read as the independent reader reads them "
    "(tests/real/reference_safetensors.py)") {
  TempDir dir;
  synth::SynthSpec spec;
  spec.total_bytes = 1 << 20;
  spec.tensor_count = 9;
  synth::write_model(dir / "packed.safetensors", spec);
  spec.alignment = 4096;
  spec.dtype = DType::F16;
  synth::write_model(dir / "aligned.safetensors", spec);
  std::vector<fs::path> models{dir / "packed.safetensors", dir / "aligned.safetensors"};
  for (const auto& entry : fs::directory_iterator(testdata() / "safetensors"))
    if (entry.path().extension() == ".safetensors") models.push_back(entry.path());
  REQUIRE(models.size() >= 5);
  const auto host = open_device("host");
  for (const auto& model : models) {
    CAPTURE(model.string());
    const Manifest m = open_manifest(model);
    const Weights w = load(m, *host);
    CHECK(check_against_reference(model, "safetensors", m, w) == m.tensors.size());
  }
}
