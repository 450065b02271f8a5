// GGUF reader: the shared testdata files checked against an independent struct-based parse in
// /usr/bin/python3, generated files for what the samples don't cover (alignment 4096, every KV type,
// v2, 10,000 tensors, a sparse > 4 GiB model read through a byte-counting file seam), and one
// malformed-input case per error class, arrays of arrays and strings over 1 GiB (refused, as ggml
// refuses them) among them.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <sstream>

#include "lwload/backend.hpp"
#include "lwload/error.hpp"
#include "lwload/loader.hpp"
#include "lwload/file_system.hpp"
#include "lwload/manifest.hpp"
#include "lwload/manifest_json.hpp"
#include "support/test_support.hpp"
#include "synth/synth.hpp"

using namespace lwload;
using namespace lwload::test;

namespace {

// ---- a small GGUF writer -------------------------------------------------------------------------

enum : std::uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kU64 = 10,
  kI64 = 11,
  kF64 = 12,
};
enum : std::uint32_t { kGgmlF32 = 0, kGgmlF16 = 1, kGgmlQ8_0 = 8, kGgmlQ4_K = 12 };

void put_str(std::vector<std::byte>& out, std::string_view s) {
  put_u64(out, s.size());
  put_bytes(out, s);
}

struct Gguf {
  std::uint32_t version = 3;
  std::vector<std::byte> kvs;
  std::vector<std::byte> infos;
  std::uint64_t kv_count = 0;
  std::uint64_t tensor_count = 0;
  std::uint64_t alignment = 32;  // what the writer pads to (set general.alignment to change the reader's)
  std::uint64_t data_bytes = 0;  // bytes of tensor data after the aligned data start

  // Starts a KV: its key and value type; the caller appends the value to `kvs`.
  std::vector<std::byte>& kv(std::string_view key, std::uint32_t type) {
    put_str(kvs, key);
    put_u32(kvs, type);
    ++kv_count;
    return kvs;
  }
  void kv_u32(std::string_view key, std::uint32_t v) { put_u32(kv(key, kU32), v); }
  void kv_string(std::string_view key, std::string_view v) { put_str(kv(key, kString), v); }

  void tensor(std::string_view name, std::vector<std::uint64_t> ne, std::uint32_t ggml_type, std::uint64_t offset) {
    put_str(infos, name);
    put_u32(infos, static_cast<std::uint32_t>(ne.size()));
    for (std::uint64_t d : ne) put_u64(infos, d);
    put_u32(infos, ggml_type);
    put_u64(infos, offset);
    ++tensor_count;
  }

  std::vector<std::byte> header() const {
    std::vector<std::byte> out;
    put_bytes(out, "GGUF");
    put_u32(out, version);
    put_u64(out, tensor_count);
    put_u64(out, kv_count);
    out.insert(out.end(), kvs.begin(), kvs.end());
    out.insert(out.end(), infos.begin(), infos.end());
    return out;
  }
  std::uint64_t data_start() const { return (header().size() + alignment - 1) / alignment * alignment; }

  // Header, padding and data_bytes of data (byte i of the data section holds i % 251).
  std::vector<std::byte> bytes() const {
    std::vector<std::byte> out = header();
    out.resize(data_start(), std::byte{0});
    for (std::uint64_t i = 0; i < data_bytes; ++i) out.push_back(static_cast<std::byte>(i % 251));
    return out;
  }
};

// One F32 tensor of 8 elements at offset 0: the base most malformed cases modify one field of.
Gguf one_tensor() {
  Gguf g;
  g.kv_string("general.architecture", "test");
  g.tensor("w", {8}, kGgmlF32, 0);
  g.data_bytes = 32;
  return g;
}

Manifest open_bytes(const TempDir& dir, const std::vector<std::byte>& bytes, const char* name = "m.gguf") {
  write_file(dir / name, bytes);
  return open_manifest(dir / name);
}

// Opens `bytes` as a GGUF and returns the error, failing the test when there is none.
Error error_of(const std::vector<std::byte>& bytes, ErrorCode expected_code = ErrorCode::bad_input) {
  TempDir dir;
  write_file(dir / "bad.gguf", bytes);
  OpenOptions options;
  options.format = "gguf";
  try {
    open_manifest(dir / "bad.gguf", options);
  } catch (const Error& e) {
    CHECK_MESSAGE(e.code() == expected_code, std::string(e.what()));
    CHECK_MESSAGE(std::string(e.what()).find("bad.gguf") != std::string::npos, std::string(e.what()));
    return e;
  }
  FAIL("no error for a malformed GGUF");
  return Error(ErrorCode::bad_input, "");
}

bool contains(const Error& e, std::string_view text) {
  return std::string_view(e.what()).find(text) != std::string_view::npos;
}

// Evaluates `error` once (doctest evaluates message arguments lazily, possibly again when reporting).
#define CHECK_ERROR_HAS(error, text)                                                   \
  do {                                                                                 \
    const Error& checked_error_ = (error);                                             \
    CHECK_MESSAGE(contains(checked_error_, text), std::string(checked_error_.what())); \
  } while (0)

const MetaValue* meta(const Manifest& m, std::string_view key) {
  for (const auto& entry : m.metadata)
    if (entry.key == key) return &entry.value;
  return nullptr;
}

template <typename T>
const T& meta_as(const Manifest& m, std::string_view key) {
  const MetaValue* v = meta(m, key);
  REQUIRE_MESSAGE(v, "missing key ", key);
  REQUIRE_MESSAGE(std::holds_alternative<T>(v->value), "key ", key, " has another type");
  return std::get<T>(v->value);
}

// ---- an independent reading: Python's struct module, nothing from lwload -------------------------

constexpr const char* kPythonParser = R"PY(
import struct, sys
f = open(sys.argv[1], 'rb'); b = f.read()
pos = 0
def take(fmt):
    global pos
    v = struct.unpack_from('<' + fmt, b, pos); pos += struct.calcsize('<' + fmt); return v[0]
def string():
    global pos
    n = take('Q'); s = b[pos:pos + n]; pos += n; return s.decode('utf-8', 'replace')
SCALAR = {0: 'B', 1: 'b', 2: 'H', 3: 'h', 4: 'I', 5: 'i', 6: 'f', 7: '?', 10: 'Q', 11: 'q', 12: 'd'}
def value(t):
    if t == 8: return string()
    if t == 9:
        et = take('I'); n = take('Q'); return [value(et) for _ in range(n)]
    return take(SCALAR[t])
assert b[:4] == b'GGUF'; pos = 4
version = take('I'); n_tensors = take('Q'); n_kv = take('Q')
alignment = 32
for _ in range(n_kv):
    k = string(); t = take('I'); v = value(t)
    if k == 'general.alignment': alignment = v
    if isinstance(v, list): print('kv|%s|array|%d' % (k, len(v)))
    else: print('kv|%s|%d|%r' % (k, t, v))
infos = []
for _ in range(n_tensors):
    name = string(); nd = take('I'); ne = [take('Q') for _ in range(nd)]; t = take('I'); off = take('Q')
    infos.append((name, ne, t, off))
start = (pos + alignment - 1) // alignment * alignment
for name, ne, t, off in infos:
    print('tensor|%s|%d|%s|%d' % (name, t, ','.join(map(str, ne)), start + off))
print('count|%d|%d' % (n_tensors, n_kv))
)PY";

struct PyTensor {
  std::uint32_t ggml_type;
  std::vector<std::int64_t> shape;
  std::uint64_t offset;
};
struct PyReading {
  std::vector<std::pair<std::string, PyTensor>> tensors;
  std::map<std::string, std::string> kvs;  // key -> "array|N" or "TYPE|repr"
  std::uint64_t n_tensors = 0, n_kv = 0;
};

std::vector<std::string> split(const std::string& line, char sep) {
  std::vector<std::string> parts;
  std::stringstream in(line);
  for (std::string part; std::getline(in, part, sep);) parts.push_back(part);
  return parts;
}

PyReading python_reading(const std::filesystem::path& gguf) {
  TempDir dir;
  write_file(dir / "parse.py", std::string_view(kPythonParser));
  std::string out;
  REQUIRE(run_command(std::string(kPython) + " " + (dir / "parse.py").string() + " " + gguf.string(), &out) == 0);
  PyReading r;
  std::stringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    const auto p = split(line, '|');
    if (p[0] == "kv") {
      r.kvs[p[1]] = p[2] + "|" + p[3];
    } else if (p[0] == "tensor") {
      PyTensor t{static_cast<std::uint32_t>(std::stoul(p[2])), {}, std::stoull(p[4])};
      for (const auto& d : split(p[3], ',')) t.shape.push_back(std::stoll(d));
      r.tensors.emplace_back(p[1], t);
    } else if (p[0] == "count") {
      r.n_tensors = std::stoull(p[1]);
      r.n_kv = std::stoull(p[2]);
    }
  }
  return r;
}

float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  float v = exp == 0    ? std::ldexp(static_cast<float>(mant), -24)
            : exp == 31 ? (mant ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity())
                        : std::ldexp(static_cast<float>(mant | 0x400), static_cast<int>(exp) - 25);
  return sign ? -v : v;
}

}  // namespace

// ---- the shared testdata -------------------------------------------------------------------------

TEST_CASE("tiny-llama-f32-f16-q8.gguf: tensors match an independent parse and the pieces hold the data") {
  const auto path = testdata() / "gguf" / "tiny-llama-f32-f16-q8.gguf";
  const Manifest m = open_manifest(path);
  const PyReading py = python_reading(path);

  CHECK(m.format == "gguf");
  REQUIRE(m.files.size() == 1);
  CHECK(m.files[0] == path);
  REQUIRE(m.tensors.size() == 5);
  REQUIRE(py.tensors.size() == 5);
  const std::map<std::uint32_t, DType> ggml{{0, DType::F32}, {1, DType::F16}, {8, DType::Q8_0}};
  for (std::size_t i = 0; i < m.tensors.size(); ++i) {
    const TensorInfo& t = m.tensors[i];
    // Named references, not a structured binding: INFO's lambda cannot capture one before clang 16.
    const auto& name = py.tensors[i].first;
    const auto& expected = py.tensors[i].second;
    INFO("tensor ", name);
    CHECK(t.name == name);
    CHECK(t.dtype == ggml.at(expected.ggml_type));
    CHECK(t.shape == expected.shape);
    REQUIRE(t.pieces.size() == 1);
    CHECK(t.pieces[0].file == 0u);
    CHECK(t.pieces[0].offset == expected.offset);
    CHECK(t.pieces[0].length == t.bytes);
    CHECK(t.pieces[0].offset % 32 == 0);
  }
  // Hand-checked against xxd: names, ggml types, ne0-first shapes and 32-aligned offsets.
  CHECK(m.tensors[0].name == "token_embd.weight");
  CHECK(m.tensors[0].shape == std::vector<std::int64_t>{64, 32});
  CHECK(m.tensors[0].pieces[0].offset == 0x240);
  CHECK(m.tensors[1].dtype == DType::F16);
  CHECK(m.tensors[2].dtype == DType::Q8_0);
  CHECK(m.tensors[2].bytes == 64 * 64 / 32 * 34);
  CHECK(m.tensors[3].name == "blk.1.norm");
  CHECK(m.tensors[3].shape == std::vector<std::int64_t>{63});
  CHECK(m.tensors[3].bytes == 63 * 4);
  CHECK(m.tensors[4].pieces[0].offset + m.tensors[4].bytes == std::filesystem::file_size(path));

  // The bytes at each piece are tensor data: F32 and F16 values finite and of weight-like size,
  // Q8_0 block scales finite and positive-or-zero in magnitude.
  for (const TensorInfo& t : m.tensors) {
    INFO("tensor ", t.name);
    const auto bytes = read_range(path, t.pieces[0].offset, t.bytes);
    if (t.dtype == DType::F32) {
      for (std::size_t i = 0; i < bytes.size(); i += 4) {
        float v;
        std::memcpy(&v, bytes.data() + i, 4);
        REQUIRE(std::isfinite(v));
        CHECK(std::fabs(v) < 100.0f);
      }
    } else if (t.dtype == DType::F16) {
      for (std::size_t i = 0; i < bytes.size(); i += 2) {
        std::uint16_t h;
        std::memcpy(&h, bytes.data() + i, 2);
        REQUIRE(std::isfinite(half_to_float(h)));
        CHECK(std::fabs(half_to_float(h)) < 100.0f);
      }
    } else {
      REQUIRE(t.dtype == DType::Q8_0);
      for (std::size_t i = 0; i < bytes.size(); i += 34) {
        std::uint16_t h;
        std::memcpy(&h, bytes.data() + i, 2);
        REQUIRE(std::isfinite(half_to_float(h)));
        CHECK(half_to_float(h) != 0.0f);
      }
    }
  }

  CHECK(m.metadata.size() == py.n_kv);
  CHECK(meta_as<std::string>(m, "general.architecture") == "llama");
  CHECK(meta_as<std::string>(m, "general.name") == "lwload-hidden-test");
  CHECK(meta_as<std::uint64_t>(m, "llama.block_count") == 2);
  CHECK(meta_as<std::uint64_t>(m, "llama.context_length") == 128);
  const auto& tokens = meta_as<MetaValue::Array>(m, "tokenizer.ggml.tokens");
  REQUIRE(tokens.size() == 4);
  CHECK(std::get<std::string>(tokens[0].value) == "<s>");
  CHECK(std::get<std::string>(tokens[3].value) == "world");
}

TEST_CASE("vocab GGUF files: no tensors, every key and array length as Python reads them") {
  for (const char* name : {"vocab-bert-bge.gguf", "vocab-llama-spm.gguf"}) {
    INFO(std::string(name));
    const auto path = testdata() / "gguf" / name;
    const Manifest m = open_manifest(path);
    const PyReading py = python_reading(path);
    CHECK(m.format == "gguf");
    CHECK(m.tensors.empty());
    CHECK(py.n_tensors == 0);
    REQUIRE(m.metadata.size() == py.n_kv);
    std::size_t arrays = 0;
    for (const MetaEntry& entry : m.metadata) {
      INFO("key ", entry.key);
      REQUIRE(py.kvs.count(entry.key) == 1);
      const auto parts = split(py.kvs.at(entry.key), '|');
      if (parts[0] == "array") {  // strings as an Array, numbers Packed
        const auto* strings = std::get_if<MetaValue::Array>(&entry.value.value);
        const auto* numbers = std::get_if<PackedArray>(&entry.value.value);
        REQUIRE((strings || numbers));
        CHECK((strings ? strings->size() : numbers->size()) == std::stoull(parts[1]));
        ++arrays;
      }
    }
    CHECK(arrays >= 2);  // tokens and token_type at least (SPM adds scores)
    const auto& tokens = meta_as<MetaValue::Array>(m, "tokenizer.ggml.tokens");
    CHECK(tokens.size() > 1000);
    CHECK(std::holds_alternative<std::string>(tokens.front().value));
    CHECK(meta_as<PackedArray>(m, "tokenizer.ggml.token_type").size() == tokens.size());
  }
}

// ---- generated files ----------------------------------------------------------------------------

TEST_CASE("general.alignment 4096: data starts on a page and offsets are page multiples") {
  TempDir dir;
  Gguf g;
  g.alignment = 4096;
  put_u32(g.kv("general.alignment", kU32), 4096);
  g.tensor("a", {256, 2}, kGgmlQ4_K, 0);  // 2 blocks of 144 bytes
  g.tensor("b", {1000}, kGgmlF32, 4096);
  g.tensor("c", {3, 5}, kGgmlF16, 8192);
  g.data_bytes = 8192 + 30;
  const Manifest m = open_bytes(dir, g.bytes());
  REQUIRE(m.tensors.size() == 3);
  CHECK(meta_as<std::uint64_t>(m, "general.alignment") == 4096);
  CHECK(m.tensors[0].pieces[0].offset == 4096);
  CHECK(m.tensors[0].bytes == 288);
  CHECK(m.tensors[0].dtype == DType::Q4_K);
  CHECK(m.tensors[1].pieces[0].offset == 8192);
  CHECK(m.tensors[2].pieces[0].offset == 12288);
  CHECK(m.tensors[2].shape == std::vector<std::int64_t>{3, 5});
  for (const auto& t : m.tensors) CHECK(t.pieces[0].offset % 4096 == 0);

  // Alignment given as another unsigned type: ggml's reader and gguf-py refuse it, so does lwload.
  for (std::uint32_t type : {kU8, kU16, kU64}) {
    CAPTURE(type);
    Gguf h;
    h.alignment = 64;
    auto& kv = h.kv("general.alignment", type);
    type == kU8 ? put_u8(kv, 64) : type == kU16 ? put_u16(kv, 64) : put_u64(kv, 64);
    h.tensor("x", {16}, kGgmlF32, 0);
    h.data_bytes = 64;
    const Error e = error_of(h.bytes());
    CHECK_ERROR_HAS(e, "metadata key 'general.alignment'");
    CHECK_ERROR_HAS(e, "must be a UINT32, not UINT");
  }
}

TEST_CASE("every KV type, arrays of scalars and strings, and a v2 file") {
  TempDir dir;
  for (std::uint32_t version : {2u, 3u}) {
    INFO("version ", version);
    Gguf g;
    g.version = version;
    put_u8(g.kv("u8", kU8), 200);
    put_u8(g.kv("i8", kI8), 0x80);
    put_u16(g.kv("u16", kU16), 65535);
    put_u16(g.kv("i16", kI16), 0xfffe);
    put_u32(g.kv("u32", kU32), 4000000000u);
    put_u32(g.kv("i32", kI32), static_cast<std::uint32_t>(-7));
    put_u32(g.kv("f32", kF32), std::bit_cast<std::uint32_t>(1.5f));
    put_u8(g.kv("bool", kBool), 1);
    put_str(g.kv("string", kString), "héllo");
    put_u64(g.kv("u64", kU64), std::numeric_limits<std::uint64_t>::max());
    put_u64(g.kv("i64", kI64), static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::min()));
    put_u64(g.kv("f64", kF64), std::bit_cast<std::uint64_t>(-2.25));
    {  // an array of every scalar width, and an empty array
      auto& kv = g.kv("bools", kArray);
      put_u32(kv, kBool);
      put_u64(kv, 3);
      for (std::uint8_t b : {1, 0, 1}) put_u8(kv, b);
      put_u32(g.kv("empty", kArray), kF64);
      put_u64(g.kvs, 0);
    }
    g.tensor("w", {4}, kGgmlF32, 0);
    g.data_bytes = 16;
    const Manifest m = open_bytes(dir, g.bytes());
    REQUIRE(m.metadata.size() == 14);
    CHECK(meta_as<std::uint64_t>(m, "u8") == 200);
    CHECK(meta_as<std::int64_t>(m, "i8") == -128);
    CHECK(meta_as<std::uint64_t>(m, "u16") == 65535);
    CHECK(meta_as<std::int64_t>(m, "i16") == -2);
    CHECK(meta_as<std::uint64_t>(m, "u32") == 4000000000u);
    CHECK(meta_as<std::int64_t>(m, "i32") == -7);
    CHECK(meta_as<double>(m, "f32") == 1.5);
    CHECK(meta_as<bool>(m, "bool") == true);
    CHECK(meta_as<std::string>(m, "string") == "héllo");
    CHECK(meta_as<std::uint64_t>(m, "u64") == std::numeric_limits<std::uint64_t>::max());
    CHECK(meta_as<std::int64_t>(m, "i64") == std::numeric_limits<std::int64_t>::min());
    CHECK(meta_as<double>(m, "f64") == -2.25);
    const auto& bools = meta_as<PackedArray>(m, "bools");
    REQUIRE(bools.size() == 3);
    CHECK(std::get<bool>(bools[0].value));
    CHECK_FALSE(std::get<bool>(bools[1].value));
    CHECK(meta_as<PackedArray>(m, "empty").type == PackedArray::Type::f64);
    CHECK(meta_as<PackedArray>(m, "empty").empty());
    // The JSON of packed arrays is what an array of scalars writes; doubles as Boost.JSON writes them.
    const std::string json = manifest_to_json(m, true);
    CHECK(json.find(R"("f64":-2.25E0,"bools":[true,false,true],"empty":[])") != std::string::npos);
    CHECK(json.find(R"("f32":1.5E0)") != std::string::npos);
    CHECK(json.find(R"("i64":-9223372036854775808)") != std::string::npos);
    // Order is the file's.
    CHECK(m.metadata.front().key == "u8");
    CHECK(m.metadata.back().key == "empty");
    REQUIRE(m.tensors.size() == 1);
    CHECK(m.tensors[0].pieces[0].offset == g.data_start());
  }
}

TEST_CASE("scalars and zero-sized tensors are accepted, packed in info order as ggml lays them out") {
  TempDir dir;
  Gguf g;
  g.tensor("first", {8}, kGgmlF32, 0);
  g.tensor("scalar", {}, kGgmlF32, 32);  // 4 bytes, padded to 32
  g.tensor("empty", {0, 4}, kGgmlF32, 64);
  g.tensor("last", {8}, kGgmlF32, 64);  // the empty tensor took no bytes
  g.data_bytes = 96;
  const Manifest m = open_bytes(dir, g.bytes());
  REQUIRE(m.tensors.size() == 4);
  CHECK(m.tensors[1].shape.empty());
  CHECK(m.tensors[1].bytes == 4);
  CHECK(m.tensors[2].bytes == 0);
  CHECK(m.tensors[2].pieces.empty());
  CHECK(m.tensors[3].pieces.at(0).offset == g.data_start() + 64);
}

TEST_CASE("a zero in a shape makes it empty, however far its other dimensions overflow 64 bits") {
  // ggml skips its element-count test for a shape holding a 0 (gguf_init_from_file reads
  // [2^40, 2^40, 0] as an empty tensor of no bytes): so does lwload. Without the 0 it overflows.
  TempDir dir;
  Gguf g;
  g.tensor("empty", {std::uint64_t{1} << 40, std::uint64_t{1} << 40, 0}, kGgmlF32, 0);
  g.tensor("w", {8}, kGgmlF32, 0);
  g.data_bytes = 32;
  const Manifest m = open_bytes(dir, g.bytes());
  REQUIRE(m.tensors.size() == 2);
  CHECK(m.tensors[0].shape == std::vector<std::int64_t>{std::int64_t{1} << 40, std::int64_t{1} << 40, 0});
  CHECK(m.tensors[0].bytes == 0);
  CHECK(m.tensors[0].pieces.empty());
  CHECK(m.tensors[1].pieces.at(0).offset == g.data_start());
  CHECK(manifest_to_json(m).find(R"("shape":[1099511627776,1099511627776,0])") != std::string::npos);
  // Block-quantized, the 0 still needs ne0 in whole blocks, as ggml checks it first.
  Gguf rows;
  rows.tensor("q", {48, std::uint64_t{1} << 40, std::uint64_t{1} << 40, 0}, kGgmlQ8_0, 0);
  CHECK_ERROR_HAS(error_of(rows.bytes()), "ne0 = 48 is not a multiple of Q8_0's block size 32");
}

TEST_CASE("10,000 tensors, and a sparse > 4 GiB GGUF is inspected from its header alone") {
  TempDir dir;
  constexpr std::uint32_t kCount = 10000;
  constexpr std::uint64_t kElems = 1u << 17;  // 512 KiB of F32 each
  constexpr std::uint64_t kBytes = kElems * 4;
  Gguf g;
  g.kv_string("general.architecture", "sparse");
  for (std::uint32_t i = 0; i < kCount; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "blk.%u.weight", i);
    g.tensor(name, {kElems / 64, 64}, kGgmlF32, i * kBytes);
  }
  const auto header = g.header();
  const auto path = dir / "sparse.gguf";
  write_file(path, header);
  const std::uint64_t total = g.data_start() + kCount * kBytes;
  std::filesystem::resize_file(path, total);  // a hole: no disk blocks for the data
  REQUIRE(total > (std::uint64_t{4} << 30));

  auto fs = std::make_shared<CountingFileSystem>();
  OpenOptions options;
  options.file_system = fs;
  const Manifest m = open_manifest(path, options);
  REQUIRE(m.tensors.size() == kCount);
  CHECK(m.total_bytes() == kCount * kBytes);
  CHECK(m.tensors[9999].name == "blk.9999.weight");
  CHECK(m.tensors[9999].pieces[0].offset == g.data_start() + 9999 * kBytes);
  CHECK(m.tensors[9999].pieces[0].offset + kBytes == total);
  // Headers only: the header plus at most one buffered read ahead (64 KiB) and the detection probe.
  MESSAGE("header ", header.size(), " bytes; bytes read ", fs->bytes_read);
  CHECK(fs->bytes_read < header.size() + 64 * 1024 + 4096);
}

TEST_CASE("every ggml type id maps to its dtype with ggml-common.h's block size and type size") {
  // {ggml id, name, QK, sizeof(block)} from ggml.h and ggml-common.h's static_asserts: every type
  // the linked ggml (GGML_TYPE_COUNT = 43) reads from a GGUF.
  struct Row {
    std::uint32_t id;
    const char* name;
    std::uint64_t block_elems, block_bytes;
  };
  const Row rows[] = {
      {0, "F32", 1, 4},         {1, "F16", 1, 2},         {2, "Q4_0", 32, 18},      {3, "Q4_1", 32, 20},
      {6, "Q5_0", 32, 22},      {7, "Q5_1", 32, 24},      {8, "Q8_0", 32, 34},      {9, "Q8_1", 32, 36},
      {10, "Q2_K", 256, 84},    {11, "Q3_K", 256, 110},   {12, "Q4_K", 256, 144},   {13, "Q5_K", 256, 176},
      {14, "Q6_K", 256, 210},   {15, "Q8_K", 256, 292},   {16, "IQ2_XXS", 256, 66}, {17, "IQ2_XS", 256, 74},
      {18, "IQ3_XXS", 256, 98}, {19, "IQ1_S", 256, 50},   {20, "IQ4_NL", 32, 18},   {21, "IQ3_S", 256, 110},
      {22, "IQ2_S", 256, 82},   {23, "IQ4_XS", 256, 136}, {24, "I8", 1, 1},         {25, "I16", 1, 2},
      {26, "I32", 1, 4},        {27, "I64", 1, 8},        {28, "F64", 1, 8},        {29, "IQ1_M", 256, 56},
      {30, "BF16", 1, 2},       {34, "TQ1_0", 256, 54},   {35, "TQ2_0", 256, 66},   {39, "MXFP4", 32, 17},
      {40, "NVFP4", 64, 36},    {41, "Q1_0", 128, 18},    {42, "Q2_0", 64, 18},
  };
  TempDir dir;
  Gguf g;
  std::uint64_t offset = 0;
  for (const Row& row : rows) {
    g.tensor(row.name, {512, 3}, row.id, offset);  // 512 = 2 blocks of 256 = 16 blocks of 32
    offset += (512 * 3 / row.block_elems * row.block_bytes + 31) / 32 * 32;
  }
  g.data_bytes = offset;
  const Manifest m = open_bytes(dir, g.bytes());
  REQUIRE(m.tensors.size() == std::size(rows));
  for (std::size_t i = 0; i < std::size(rows); ++i) {
    INFO(std::string(rows[i].name));
    CHECK(dtype_name(m.tensors[i].dtype) == rows[i].name);
    CHECK(m.tensors[i].bytes == 512 * 3 / rows[i].block_elems * rows[i].block_bytes);
    const auto layout = dtype_layout(m.tensors[i].dtype);
    REQUIRE(layout);
    CHECK(layout->block_elems == rows[i].block_elems);
    CHECK(layout->block_bytes == rows[i].block_bytes);
  }
  for (std::uint32_t id = 0; id < 64; ++id) {
    const bool known = std::any_of(std::begin(rows), std::end(rows), [&](const Row& r) { return r.id == id; });
    CHECK_MESSAGE(dtype_from_ggml(id).has_value() == known, "ggml id ", id);
  }
}

// ---- malformed input: one case per error class ---------------------------------------------------

TEST_CASE("truncated files fail as bad input at every cut through the header") {
  const auto full = read_file(testdata() / "gguf" / "tiny-llama-f32-f16-q8.gguf");
  const std::size_t header_end = 0x240;  // data start, from the independent parse
  for (std::size_t cut = 0; cut < full.size(); cut += (cut < header_end ? 1 : 997)) {
    INFO("cut at ", cut);
    const Error e = error_of(std::vector<std::byte>(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(cut)));
    CHECK_MESSAGE((contains(e, "truncated") || contains(e, "ended after") || contains(e, "past the end") ||
                   contains(e, "remain") || contains(e, "cannot fit")),
                  std::string(e.what()));
  }
}

TEST_CASE("bad magic, unsupported versions") {
  auto bytes = one_tensor().bytes();
  bytes[0] = std::byte{'X'};
  CHECK_ERROR_HAS(error_of(bytes), "GGUF magic");

  Gguf v1 = one_tensor();
  v1.version = 1;
  CHECK_ERROR_HAS(error_of(v1.bytes(), ErrorCode::unsupported), "version 1 is not supported");
  Gguf v4 = one_tensor();
  v4.version = 4;
  CHECK_ERROR_HAS(error_of(v4.bytes(), ErrorCode::unsupported), "version 4");
  Gguf big_endian = one_tensor();
  big_endian.version = 0x03000000;
  CHECK_ERROR_HAS(error_of(big_endian.bytes(), ErrorCode::unsupported), "big-endian");
  Gguf v0 = one_tensor();
  v0.version = 0;
  CHECK_ERROR_HAS(error_of(v0.bytes()), "version 0");
}

TEST_CASE("absurd counts and lengths fail before anything is allocated") {
  Gguf tensors = one_tensor();
  tensors.tensor_count = std::uint64_t{1} << 60;
  const Error t = error_of(tensors.bytes());
  CHECK_ERROR_HAS(t, "1152921504606846976 tensors");

  Gguf kvs = one_tensor();
  kvs.kv_count = std::uint64_t{1} << 60;
  CHECK_ERROR_HAS(error_of(kvs.bytes()), "1152921504606846976 key/values");

  Gguf string = one_tensor();
  put_u64(string.kv("general.name", kString), std::uint64_t{1} << 62);
  const Error s = error_of(string.bytes());
  CHECK_ERROR_HAS(s, "metadata key 'general.name'");
  CHECK_ERROR_HAS(s, "4611686018427387904");

  Gguf array = one_tensor();
  auto& kv = array.kv("tokenizer.ggml.scores", kArray);
  put_u32(kv, kF32);
  put_u64(kv, std::uint64_t{1} << 50);
  const Error a = error_of(array.bytes());
  CHECK_ERROR_HAS(a, "metadata key 'tokenizer.ggml.scores'");
  CHECK_ERROR_HAS(a, "array of 1125899906842624 FLOAT32");

  Gguf name = one_tensor();
  name.infos.clear();
  put_u64(name.infos, std::uint64_t{1} << 62);
  CHECK_ERROR_HAS(error_of(name.bytes()), "name length 4611686018427387904");

  Gguf key = one_tensor();
  put_u64(key.kvs, std::uint64_t{1} << 40);
  ++key.kv_count;
  CHECK_ERROR_HAS(error_of(key.bytes()), "length 1099511627776 exceeds");
}

TEST_CASE("unknown or retired ggml types, unknown KV types, too many dims") {
  for (std::uint32_t type : {4u, 5u, 31u, 36u, 38u, 1000u}) {
    Gguf g;
    g.tensor("w", {32}, type, 0);
    g.data_bytes = 128;
    const Error e = error_of(g.bytes());
    CHECK_ERROR_HAS(e, "tensor 'w'");
    CHECK_ERROR_HAS(e, str("ggml type ", type, " is unknown or retired"));
  }

  Gguf kv = one_tensor();
  put_u32(kv.kv("odd", 13), 0);
  const Error k = error_of(kv.bytes());
  CHECK_ERROR_HAS(k, "metadata key 'odd'");
  CHECK_ERROR_HAS(k, "unknown value type 13");

  Gguf element = one_tensor();
  auto& arr = element.kv("odd.array", kArray);
  put_u32(arr, 99);
  put_u64(arr, 1);
  CHECK_ERROR_HAS(error_of(element.bytes()), "array of unknown value type 99");

  Gguf dims;
  dims.tensor("w5", {1, 1, 1, 1, 8}, kGgmlF32, 0);
  dims.data_bytes = 32;
  const Error d = error_of(dims.bytes());
  CHECK_ERROR_HAS(d, "tensor 'w5'");
  CHECK_ERROR_HAS(d, "n_dims 5 exceeds");

  Gguf huge_dim;
  huge_dim.tensor("h", {std::uint64_t{1} << 63}, kGgmlF32, 0);
  CHECK_ERROR_HAS(error_of(huge_dim.bytes()), "ne[0] = 9223372036854775808");

  Gguf overflow;
  overflow.tensor("o", {std::uint64_t{1} << 40, std::uint64_t{1} << 40}, kGgmlF32, 0);
  const Error o = error_of(overflow.bytes());
  CHECK_ERROR_HAS(o, "tensor 'o' info at offset 24");
  CHECK_ERROR_HAS(o, "element count of shape [1099511627776, 1099511627776] overflows 64 bits");

  // 2^63 elements fit lwload's 64-bit count (and, as Q1_0, 2^60 bytes an XFS file) but not ggml's
  // int64_t: gguf_init_from_file refuses the shape.
  Gguf int64_count;
  int64_count.tensor("big", {std::uint64_t{1} << 62, 2}, 41, 0);
  const Error ic = error_of(int64_count.bytes());
  CHECK_ERROR_HAS(ic, "tensor 'big' info");
  CHECK_ERROR_HAS(ic, "is not below INT64_MAX");

  Gguf partial_block;
  partial_block.tensor("q", {48, 2}, kGgmlQ8_0, 0);  // 96 elements = 3 blocks, but rows of 48
  partial_block.data_bytes = 128;
  CHECK_ERROR_HAS(error_of(partial_block.bytes()), "ne0 = 48 is not a multiple of Q8_0's block size 32");

  // ggml keeps a name and its NUL in GGML_MAX_NAME = 64 bytes: gguf_init_from_file refuses 64 bytes
  // ("tensor name 0 is too long: 64 >= 64"), and so does lwload, naming the tensor and the limit.
  for (const std::size_t length : {64u, 65u, 89u}) {
    CAPTURE(length);
    Gguf long_name;
    long_name.tensor(std::string(length, 'n'), {8}, kGgmlF32, 0);
    long_name.data_bytes = 32;
    const Error e = error_of(long_name.bytes());
    CHECK_ERROR_HAS(e, "tensor '" + std::string(length, 'n') + "'");
    CHECK_ERROR_HAS(e, str("name length ", length, " is not below ggml's limit of 64 bytes"));
  }
  Gguf name63;
  name63.tensor(std::string(63, 'n'), {8}, kGgmlF32, 0);
  name63.data_bytes = 32;
  TempDir dir;
  CHECK(open_bytes(dir, name63.bytes()).tensors.at(0).name.size() == 63);
  // A NUL inside a name: ggml reads "w" (and refuses "w\0evil" beside "w" as a duplicate).
  Gguf nul;
  nul.tensor(std::string("w\0evil", 6), {8}, kGgmlF32, 0);
  nul.tensor("w", {8}, kGgmlF32, 32);
  nul.data_bytes = 64;
  const Error n = error_of(nul.bytes());
  CHECK_ERROR_HAS(n, "tensor info #0");
  CHECK_ERROR_HAS(n, "name holds a NUL byte at byte 1 of 6");
  CHECK_ERROR_HAS(n, "would call this tensor 'w'");

  // An array of arrays: gguf-py writes and reads one, ggml refuses the file ("key 'nested' has
  // invalid GGUF type 9"), and so does lwload, at the inner array's type.
  Gguf nested = one_tensor();
  auto& outer = nested.kv("nested", kArray);
  put_u32(outer, kArray);
  put_u64(outer, 1);
  put_u32(outer, kI16);
  put_u64(outer, 2);
  put_u16(outer, 1);
  put_u16(outer, 2);
  const Error a = error_of(nested.bytes());
  CHECK_ERROR_HAS(a, "metadata key 'nested'");
  CHECK_ERROR_HAS(a, "an array of arrays");
  CHECK_ERROR_HAS(a, "gguf_init_from_file refuses");
}

TEST_CASE("a string over 1 GiB is refused as ggml refuses it, though the file holds its bytes") {
  // ggml's GGUF_MAX_STRING_LENGTH is 1 GiB: a longer string fails gguf_init_from_file even when the
  // file is long enough. The file here is sparse (a hole where the string's bytes would be), and
  // lwload refuses it from the length field, before it allocates or reads the string.
  for (const bool in_array : {false, true}) {
    CAPTURE(in_array);
    constexpr std::uint64_t kLength = (std::uint64_t{1} << 30) + 1;
    Gguf g;
    if (in_array) {
      auto& kv = g.kv("tokens", kArray);
      put_u32(kv, kString);
      put_u64(kv, 1);
      put_u64(kv, kLength);
    } else {
      put_u64(g.kv("big", kString), kLength);
    }
    TempDir dir;
    const auto path = dir / "bad.gguf";
    write_file(path, g.header());
    std::filesystem::resize_file(path, g.header().size() + kLength + 4096);
    auto fs = std::make_shared<CountingFileSystem>();
    OpenOptions options;
    options.file_system = fs;
    try {
      open_manifest(path, options);
      FAIL("a 1 GiB + 1 string was read");
    } catch (const Error& e) {
      CHECK(e.code() == ErrorCode::bad_input);
      CHECK_ERROR_HAS(e, "bad.gguf");
      CHECK_ERROR_HAS(e, in_array ? "metadata key 'tokens'" : "metadata key 'big'");
      CHECK_ERROR_HAS(e, "string length 1073741825 exceeds ggml's limit of 1073741824 bytes");
    }
    CHECK(fs->bytes_read < 64 * 1024 + 4096);  // the header, never the string
  }
  // 1 GiB itself is within the limit: a length field alone, in a file too short for it, is refused
  // for the bytes it lacks, not for ggml's limit.
  Gguf exact;
  put_u64(exact.kv("big", kString), std::uint64_t{1} << 30);
  const Error e = error_of(exact.header());
  CHECK_FALSE(contains(e, "GGUF_MAX_STRING_LENGTH"));
}

TEST_CASE(
    "offsets past the end, overflowing, misaligned, overlapping, gapped or out of order; duplicate names and keys") {
  Gguf past = one_tensor();
  past.data_bytes = 16;  // the tensor needs 32
  const Error p = error_of(past.bytes());
  CHECK_ERROR_HAS(p, "tensor 'w'");
  CHECK_ERROR_HAS(p, "extend past the end of the file");

  Gguf overflow;
  overflow.tensor("w", {8}, kGgmlF32, std::numeric_limits<std::uint64_t>::max() - 31);
  overflow.data_bytes = 32;
  const Error o = error_of(overflow.bytes());
  CHECK_ERROR_HAS(o, "tensor 'w'");
  CHECK_ERROR_HAS(o, "overflows 64 bits");

  Gguf near_end;  // data start + offset fits 64 bits (and is aligned), + length does not
  near_end.tensor("w", {8}, kGgmlF32, 0);
  const std::uint64_t start = near_end.data_start();
  near_end.infos.resize(near_end.infos.size() - 8);
  put_u64(near_end.infos, (std::numeric_limits<std::uint64_t>::max() - start) / 32 * 32);
  const Error n = error_of(near_end.bytes());
  CHECK_ERROR_HAS(n, "tensor 'w'");
  CHECK_ERROR_HAS(n, "overflows 64 bits");

  Gguf misaligned;
  misaligned.tensor("w", {8}, kGgmlF32, 16);
  misaligned.data_bytes = 64;
  const Error m = error_of(misaligned.bytes());
  CHECK_ERROR_HAS(m, "tensor 'w'");
  CHECK_ERROR_HAS(m, "data offset 16 is not a multiple of the alignment 32");

  // ggml's reader takes tensors packed in info order, each padded to the alignment, and refuses
  // any other offset: an overlap, a gap, or aligned, disjoint tensors out of order.
  Gguf overlap;
  overlap.tensor("a", {16}, kGgmlF32, 0);  // [0, 64)
  overlap.tensor("b", {8}, kGgmlF32, 32);  // [32, 64)
  overlap.data_bytes = 64;
  const Error v = error_of(overlap.bytes());
  CHECK_ERROR_HAS(v, "tensor 'b'");
  CHECK_ERROR_HAS(v, "data offset 32 but ggml's reader expects 64");
  Gguf gap;
  gap.tensor("a", {8}, kGgmlF32, 0);
  gap.tensor("b", {8}, kGgmlF32, 64);  // 32 bytes of nothing between them
  gap.data_bytes = 96;
  const Error g = error_of(gap.bytes());
  CHECK_ERROR_HAS(g, "tensor 'b'");
  CHECK_ERROR_HAS(g, "data offset 64 but ggml's reader expects 32");
  Gguf order;
  order.tensor("late", {8}, kGgmlF32, 32);
  order.tensor("early", {8}, kGgmlF32, 0);
  order.data_bytes = 64;
  const Error o2 = error_of(order.bytes());
  CHECK_ERROR_HAS(o2, "tensor 'late'");
  CHECK_ERROR_HAS(o2, "data offset 32 but ggml's reader expects 0");
  CHECK_ERROR_HAS(o2, "tensors lie in info order");
  Gguf padded;  // the padding after a 4-byte scalar is the alignment's, not the tensor's
  padded.tensor("s", {}, kGgmlF32, 0);
  padded.tensor("t", {8}, kGgmlF32, 4);
  padded.data_bytes = 64;
  CHECK_ERROR_HAS(error_of(padded.bytes()), "data offset 4 is not a multiple of the alignment 32");

  Gguf dup;
  dup.tensor("w", {8}, kGgmlF32, 0);
  dup.tensor("w", {8}, kGgmlF32, 32);
  dup.data_bytes = 64;
  CHECK_ERROR_HAS(error_of(dup.bytes()), "tensor name 'w' appears twice");

  Gguf dup_key = one_tensor();
  dup_key.kv_string("general.architecture", "again");
  CHECK_ERROR_HAS(error_of(dup_key.bytes()), "metadata key 'general.architecture'");

  Gguf empty_key = one_tensor();
  put_u8(empty_key.kv("", kU8), 1);
  CHECK_ERROR_HAS(error_of(empty_key.bytes()), "the key is empty");
}

TEST_CASE("bad general.alignment values") {
  for (std::uint32_t value : {0u, 3u, 48u}) {
    Gguf g = one_tensor();
    g.kv_u32("general.alignment", value);
    const Error e = error_of(g.bytes());
    CHECK_ERROR_HAS(e, "metadata key 'general.alignment'");
    CHECK_ERROR_HAS(e, str("alignment ", value, " is not a non-zero power of two"));
  }
  Gguf signed_type = one_tensor();
  put_u32(signed_type.kv("general.alignment", kI32), 32);
  CHECK_ERROR_HAS(error_of(signed_type.bytes()), "must be a UINT32, not INT32");
  Gguf string_type = one_tensor();
  string_type.kv_string("general.alignment", "32");
  CHECK_ERROR_HAS(error_of(string_type.bytes()), "must be a UINT32, not STRING");
}

TEST_CASE("lwload inspect: GGUF as JSON, exit code 3 for a malformed GGUF") {
  const char* exe = std::getenv("LWLOAD_EXE");
  if (!exe) {
    (void)lwload::test::have_exe();  // reports the skip; a failure under LWLOAD_REQUIRE=exe
    return;
  }
  std::string out;
  const auto tiny = testdata() / "gguf" / "tiny-llama-f32-f16-q8.gguf";
  REQUIRE(run_command(std::string(exe) + " inspect --json " + tiny.string(), &out) == 0);
  CHECK(out.find("\"gguf\"") != std::string::npos);
  CHECK(out.find("\"Q8_0\"") != std::string::npos);
  CHECK(out.find("\"blk.1.norm\"") != std::string::npos);

  TempDir dir;
  Gguf bad = one_tensor();
  bad.tensor_count = std::uint64_t{1} << 60;
  write_file(dir / "bad.gguf", bad.bytes());
  CHECK(run_command(std::string(exe) + " inspect " + (dir / "bad.gguf").string() + " 2>&1", &out) == 3);
}

// ---- split GGUF (llama.cpp's gguf-split layout) ----------------------------------------------------

namespace {

// Part k (0-based) of a `count`-part model: a full GGUF holding tensors "blk.<k>.<j>" (two F32
// tensors of 8 elements each) and the split keys gguf-split writes (UINT16 no/count, INT32 total);
// the model's own KVs only in the first part, as gguf-split does.
Gguf split_part(std::uint16_t k, std::uint16_t count, std::int32_t total, std::string_view arch = "llama") {
  Gguf g;
  if (k == 0) g.kv_string("general.architecture", arch);
  put_u16(g.kv("split.no", kU16), k);
  put_u16(g.kv("split.count", kU16), count);
  put_u32(g.kv("split.tensors.count", kI32), static_cast<std::uint32_t>(total));
  g.tensor("blk." + std::to_string(k) + ".a", {8}, kGgmlF32, 0);
  g.tensor("blk." + std::to_string(k) + ".b", {8}, kGgmlF32, 32);
  g.data_bytes = 64;
  return g;
}

std::string part_file(int k, int count) {
  char name[64];
  std::snprintf(name, sizeof name, "model-%05d-of-%05d.gguf", k, count);
  return name;
}

void write_split(const TempDir& dir, int count) {
  for (int k = 0; k < count; ++k)
    write_file(dir / part_file(k + 1, count),
               split_part(static_cast<std::uint16_t>(k), static_cast<std::uint16_t>(count), 2 * count).bytes());
}

Error split_error(const std::filesystem::path& path) {
  try {
    open_manifest(path);
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::bad_input);
    return e;
  }
  FAIL("no error for an inconsistent split GGUF");
  return Error(ErrorCode::bad_input, "");
}

}  // namespace

TEST_CASE("gguf split: opening any part gives the whole model, tensors in their own files") {
  TempDir dir;
  write_split(dir, 3);
  for (int opened = 1; opened <= 3; ++opened) {
    CAPTURE(opened);
    const Manifest m = open_manifest(dir / part_file(opened, 3));
    CHECK(m.format == "gguf");
    REQUIRE(m.files.size() == 3);
    REQUIRE(m.tensors.size() == 6);
    for (int k = 0; k < 3; ++k) {
      CHECK(m.files[static_cast<std::size_t>(k)].filename() == part_file(k + 1, 3));
      const TensorInfo* b = m.find("blk." + std::to_string(k) + ".b");
      REQUIRE(b != nullptr);
      REQUIRE(b->pieces.size() == 1);
      CHECK(b->pieces[0].file == static_cast<std::uint32_t>(k));
      // The bytes are part k's own: data byte 32.. of that file's data section.
      const Gguf part = split_part(static_cast<std::uint16_t>(k), 3, 6);
      CHECK(b->pieces[0].offset == part.data_start() + 32);
    }
    CHECK(meta_as<std::string>(m, "general.architecture") == "llama");
  }
}

TEST_CASE("gguf split: a missing part, inconsistent counts, a duplicate tensor, a wrong total") {
  TempDir dir;
  write_split(dir, 3);
  SUBCASE("missing part") {
    std::filesystem::remove(dir / part_file(2, 3));
    const Error e = split_error(dir / part_file(1, 3));
    CHECK_ERROR_HAS(e, "part 2 of 3");
    CHECK_ERROR_HAS(e, "is missing");
  }
  SUBCASE("a part that disagrees on split.count") {
    write_file(dir / part_file(3, 3), split_part(2, 4, 6).bytes());
    const Error e = split_error(dir / part_file(1, 3));
    CHECK_ERROR_HAS(e, "split.count is 4");
    CHECK_ERROR_HAS(e, part_file(3, 3));
  }
  SUBCASE("a part whose split.no is not its place") {
    write_file(dir / part_file(3, 3), split_part(1, 3, 6).bytes());
    CHECK_ERROR_HAS(split_error(dir / part_file(1, 3)), "split.no is 1");
  }
  SUBCASE("split.tensors.count differs from the tensors the parts hold") {
    for (int k = 0; k < 3; ++k)
      write_file(dir / part_file(k + 1, 3), split_part(static_cast<std::uint16_t>(k), 3, 7).bytes());
    CHECK_ERROR_HAS(split_error(dir / part_file(2, 3)), "split.tensors.count is 7 but the 3 parts hold 6 tensors");
  }
  SUBCASE("a tensor in two parts") {
    Gguf dup = split_part(2, 3, 6);
    dup.infos.clear();
    dup.tensor_count = 0;
    dup.tensor("blk.0.a", {8}, kGgmlF32, 0);
    dup.tensor("blk.2.b", {8}, kGgmlF32, 32);
    write_file(dir / part_file(3, 3), dup.bytes());
    const Error e = split_error(dir / part_file(1, 3));
    CHECK_ERROR_HAS(e, "tensor 'blk.0.a' also appears in");
    CHECK_ERROR_HAS(e, part_file(1, 3));
  }
  SUBCASE("a split file whose name does not say where its parts are") {
    std::filesystem::rename(dir / part_file(1, 3), dir / "renamed.gguf");
    CHECK_ERROR_HAS(split_error(dir / "renamed.gguf"), "NAME-0000k-of-0000N.gguf");
  }
}

TEST_CASE("lwload load --verify on a split GGUF") {
  const char* exe = std::getenv("LWLOAD_EXE");
  if (!lwload::test::have_exe()) return;
  TempDir dir;
  write_split(dir, 3);
  std::string out;
  CHECK(run_command(std::string(exe) + " inspect " + (dir / part_file(2, 3)).string(), &out) == 0);
  CHECK(out.find("blk.2.b") != std::string::npos);
  for (const char* placement : {"", " --placement direct", " --placement staged"}) {
    CAPTURE(placement);
    out.clear();
    CHECK(run_command(
              std::string(exe) + " load " + (dir / part_file(1, 3)).string() + " --device host --verify" + placement,
              &out) == 0);
    CHECK(out.find("verify: ok, 6 tensors") != std::string::npos);
  }
}

TEST_CASE(
    "every GGUF in testdata and a synthetic one read as the independent reader reads them "
    "(tests/real/reference_gguf.py)") {
  TempDir dir;
  synth::SynthSpec spec;
  spec.format = "gguf";
  spec.total_bytes = 1 << 20;
  spec.tensor_count = 7;
  spec.dtype = DType::Q8_0;
  synth::write_model(dir / "synth.gguf", spec);
  std::vector<std::filesystem::path> models{dir / "synth.gguf"};
  for (const auto& entry : std::filesystem::directory_iterator(testdata() / "gguf"))
    if (entry.path().extension() == ".gguf") models.push_back(entry.path());
  REQUIRE(models.size() >= 4);
  const auto host = open_device("host");
  for (const auto& model : models) {
    CAPTURE(model.string());
    const Manifest m = open_manifest(model);
    const Weights w = load(m, *host);
    CHECK(check_against_reference(model, "gguf", m, w) == m.tensors.size());
  }
}

TEST_CASE("an array of more than 2^24 numbers is read, as ggml reads it (its bytes are the file's)") {
  // lwload once refused any header holding more than 2^24 metadata values; ggml's reader has no
  // such limit, and an array of numbers costs what the file holds (kept as its bytes), so only
  // strings count against it now.
  constexpr std::uint64_t count = (std::uint64_t{1} << 24) + 1;
  Gguf big = one_tensor();
  auto& kv = big.kv("big", kArray);
  put_u32(kv, kU8);
  put_u64(kv, count);
  kv.resize(kv.size() + count, std::byte{7});
  TempDir dir;
  const Manifest m = open_bytes(dir, big.bytes());
  const auto& array = meta_as<PackedArray>(m, "big");
  CHECK(array.size() == count);
  CHECK(std::get<std::uint64_t>(array[count - 1].value) == 7);
}
