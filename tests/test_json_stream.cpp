// Streamed JSON (formats/json/json_file.hpp): the readers feed Boost.JSON's incremental parser in read
// chunks, so every kind of token (number, string, key, escape, UTF-8 sequence, literal) must come
// out the same wherever a chunk boundary falls inside it. Each case sweeps the chunk size (every
// size from 1 byte up to past the text) or the token's position across the default 64 KiB
// boundary, through each streamed reader: read_json (TFJS manifests, safetensors index files),
// the safetensors header parser, sniff_json_top (detection) and open_manifest on top of them.
// Expected values are written out here (numbers as the doubles std::from_chars gives for their
// text), not taken from another parse.
#include <doctest/doctest.h>

#include <boost/json.hpp>

#include <charconv>
#include <cstring>
#include <string>
#include <vector>

#include "formats/format.hpp"
#include "formats/json/json_file.hpp"
#include "formats/json/json_select.hpp"
#include "formats/safetensors/safetensors_header.hpp"
#include "lwload/error.hpp"
#include "lwload/loader.hpp"
#include "lwload/memory_file_system.hpp"
#include "support/test_support.hpp"

using namespace lwload;
using namespace lwload::test;
namespace json = boost::json;

namespace {

// Restores the default chunk size when a case ends (also when a CHECK throws).
struct ChunkSize {
  std::size_t saved = formats::json_chunk_bytes();
  explicit ChunkSize(std::size_t bytes) { formats::set_json_chunk_bytes(bytes); }
  ~ChunkSize() { formats::set_json_chunk_bytes(saved); }
  void set(std::size_t bytes) { formats::set_json_chunk_bytes(bytes); }
};

std::vector<std::byte> bytes_of(std::string_view s) {
  std::vector<std::byte> v;
  put_bytes(v, s);
  return v;
}

// A file of `text` in a MemoryFileSystem, opened.
struct TextFile {
  std::shared_ptr<MemoryFileSystem> fs = std::make_shared<MemoryFileSystem>();
  std::unique_ptr<RandomAccessFile> file;
  explicit TextFile(std::string_view text, const char* name = "t.json") {
    fs->add_file(name, bytes_of(text));
    file = fs->open(name);
  }
};

double exact(std::string_view text) {
  double d = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), d);
  REQUIRE(ec == std::errc());
  REQUIRE(end == text.data() + text.size());
  return d;
}

// Every kind of token: integers (int64, uint64 beyond int64, negative), numbers with a fraction
// and an exponent (one whose Boost 1.81 conversion is 1 ulp off), escapes of every kind (the short
// ones, \u with and without a surrogate pair), raw UTF-8 of 2, 3 and 4 bytes in keys and strings,
// literals, nesting and white space.
constexpr std::string_view kDocument =
    R"({"int":1234567890123,"big":18446744073709551615,"neg":-9223372036854775808,)"
    R"("scale":0.023198612531026206,"exp":-6.02214076e+23,"tiny":2.2250738585072011e-308,)"
    R"("esc\"ape\\key":"q\"b\\s\/b\bf\fn\nr\rt\t","uni\u00e9":"\u00e9\u4e2d\ud83d\ude00",)"
    R"("utf8 é中😀":"é中😀",  "lits" : [true, false, null, [], {}],)"
    "\n\t\"nested\":{\"a\":[1,2.5,\"x\"],\"b\":{\"c\":-0.5e-3}}}";

void check_document(const json::value& v) {
  const json::object& o = v.as_object();
  REQUIRE(o.size() == 11);
  CHECK(o.at("int").as_int64() == 1234567890123);
  CHECK(o.at("big").as_uint64() == 18446744073709551615ull);
  CHECK(o.at("neg").as_int64() == std::numeric_limits<std::int64_t>::min());
  CHECK(o.at("scale").as_double() == exact("0.023198612531026206"));
  CHECK(o.at("scale").as_double() == 0x1.7c16088888889p-6);
  CHECK(o.at("exp").as_double() == exact("-6.02214076e+23"));
  CHECK(o.at("tiny").as_double() == exact("2.2250738585072011e-308"));
  CHECK(std::string_view(o.at("esc\"ape\\key").as_string()) == "q\"b\\s/b\bf\fn\nr\rt\t");
  CHECK(std::string_view(o.at("uni\xc3\xa9").as_string()) == "\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80");
  CHECK(std::string_view(o.at("utf8 \xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80").as_string()) ==
        "\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80");
  const json::array& lits = o.at("lits").as_array();
  REQUIRE(lits.size() == 5);
  CHECK(lits[0].as_bool() == true);
  CHECK(lits[1].as_bool() == false);
  CHECK(lits[2].is_null());
  CHECK(lits[3].as_array().empty());
  CHECK(lits[4].as_object().empty());
  const json::array& a = o.at("nested").at("a").as_array();
  REQUIRE(a.size() == 3);
  CHECK(a[0].as_int64() == 1);
  CHECK(a[1].as_double() == 2.5);
  CHECK(std::string_view(a[2].as_string()) == "x");
  CHECK(o.at("nested").at("b").at("c").as_double() == exact("-0.5e-3"));
}

}  // namespace

TEST_CASE("read_json: every token split at every position (chunk sizes 1 .. past the text)") {
  TextFile t(kDocument);
  ChunkSize chunk(1);
  for (std::size_t size = 1; size <= kDocument.size() + 1; ++size) {
    INFO("chunk size " << size);
    chunk.set(size);
    check_document(formats::read_json(*t.file, 0, kDocument.size(), "doc"));
  }
}

TEST_CASE("read_json: a number, string, key, escape and UTF-8 sequence across the default 64 KiB boundary") {
  REQUIRE(formats::json_chunk_bytes() == 64 * 1024);
  // Leading white space moves the document so that each byte of it in turn is the first byte of
  // the second chunk; only the offsets that fall inside the document's tokens matter, and those
  // are all of them.
  for (std::size_t first = 0; first <= kDocument.size(); ++first) {
    INFO("document byte " << first << " starts the second chunk");
    const std::string text = std::string(64 * 1024 - first, ' ') + std::string(kDocument);
    TextFile t(text);
    check_document(formats::read_json(*t.file, 0, text.size(), "doc"));
  }
}

TEST_CASE("read_json: errors name the absolute byte whatever the chunk size") {
  const std::string text = R"({"a":[1,2,)" + std::string("\x01") + "]}";
  TextFile t(std::string(5, ' ') + text);
  ChunkSize chunk(1);
  for (std::size_t size : {1, 2, 3, 7, 64, 1 << 16}) {
    chunk.set(size);
    const Error e = error_of([&] { formats::read_json(*t.file, 5, text.size(), "doc"); });
    CHECK(e.code() == ErrorCode::bad_input);
    CHECK(std::string(e.what()).find("doc: malformed JSON at byte 15 of the file") != std::string::npos);
  }
}

TEST_CASE("safetensors header: names with escapes and UTF-8, metadata and offsets split at every position") {
  const std::string header = R"({"__metadata__":{"format":"pt","n\u00f6te":"a\"b\\c\u4e2d😀"},)"
                             R"("emb\u00e9d\"q":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},)"
                             R"("blk.0/ü😀":{"dtype":"U8","shape":[1000],"data_offsets":[24,1024]},)"
                             R"("z":{"dtype":"F16","shape":[],"data_offsets":[1024,1026]}})";
  std::vector<std::byte> file;
  put_u64(file, header.size());
  put_bytes(file, header);
  const std::vector<std::byte> data = counting_bytes(1026);
  file.insert(file.end(), data.begin(), data.end());
  auto fs = std::make_shared<MemoryFileSystem>();
  fs->add_file("m.safetensors", file);
  const auto f = fs->open("m.safetensors");
  ChunkSize chunk(1);
  for (std::size_t size = 1; size <= header.size() + 1; ++size) {
    INFO("chunk size " << size);
    chunk.set(size);
    Manifest m;
    m.files.push_back("m.safetensors");
    const formats::HeaderLimits limits;
    formats::TensorCaps caps(limits);
    formats::parse_safetensors_header(*f, header.size(), 0, m, caps);
    REQUIRE(m.tensors.size() == 3);
    CHECK(m.tensors[0].name ==
          "emb\xc3\xa9"
          "d\"q");
    CHECK(m.tensors[0].shape == std::vector<std::int64_t>{2, 3});
    CHECK(m.tensors[0].pieces.at(0).offset == 8 + header.size());
    CHECK(m.tensors[1].name == "blk.0/\xc3\xbc\xf0\x9f\x98\x80");
    CHECK(m.tensors[1].dtype == DType::U8);
    CHECK(m.tensors[1].shape == std::vector<std::int64_t>{1000});
    CHECK(m.tensors[1].pieces.at(0).offset == 8 + header.size() + 24);
    CHECK(m.tensors[1].pieces.at(0).length == 1000);
    CHECK(m.tensors[2].name == "z");
    CHECK(m.tensors[2].shape.empty());
    CHECK(m.tensors[2].pieces.at(0).offset == 8 + header.size() + 1024);
    REQUIRE(m.metadata.size() == 2);
    CHECK(m.metadata[1].key == "n\xc3\xb6te");
    CHECK(std::get<std::string>(m.metadata[1].value.value) == "a\"b\\c\xe4\xb8\xad\xf0\x9f\x98\x80");
  }
}

TEST_CASE("safetensors: a tensor name ending exactly at the 64 KiB chunk end (and around it), many tensors") {
  // The -O0 failure's shape: thousands of entries, one of whose keys ends on a chunk's last byte.
  // Sweeping a pad in the first name moves every later key across the boundary.
  REQUIRE(formats::json_chunk_bytes() == 64 * 1024);
  for (std::size_t pad = 0; pad < 24; ++pad) {
    INFO("pad " << pad);
    std::string header = "{";
    std::uint64_t at = 0;
    const int count = 1500;  // about 70 KiB of header: the boundary falls inside the entries
    for (int i = 0; i < count; ++i) {
      const std::string name = (i == 0 ? std::string(pad, 'p') : std::string()) + "t" + std::to_string(i);
      header += (i ? "," : "") + std::string("\"") + name + R"(":{"dtype":"U8","shape":[1],"data_offsets":[)" +
                std::to_string(at) + "," + std::to_string(at + 1) + "]}";
      ++at;
    }
    header += "}";
    REQUIRE(header.size() > 64 * 1024);
    std::vector<std::byte> file;
    put_u64(file, header.size());
    put_bytes(file, header);
    const std::vector<std::byte> data = counting_bytes(count);
    file.insert(file.end(), data.begin(), data.end());
    auto fs = std::make_shared<MemoryFileSystem>();
    fs->add_file("m.safetensors", file);
    OpenOptions options;
    options.file_system = fs;
    const Manifest m = open_manifest("m.safetensors", options);
    REQUIRE(m.tensors.size() == static_cast<std::size_t>(count));
    CHECK(m.tensors[count - 1].name == "t" + std::to_string(count - 1));
    CHECK(m.tensors[count - 1].pieces.at(0).offset == 8 + header.size() + count - 1);
  }
}

TEST_CASE("sniff_json_top: wanted keys found with every chunk size") {
  const std::string text =
      R"( {"format":"graph-model","modelTopology":{"node":[1,2.5e3]},"weights\u004danifest":[{"paths":["é"]}]})";
  auto fs = std::make_shared<MemoryFileSystem>();
  fs->add_file("m.json", bytes_of(text));
  ChunkSize chunk(1);
  for (std::size_t size = 1; size <= text.size() + 1; ++size) {
    INFO("chunk size " << size);
    chunk.set(size);
    const auto top = formats::sniff_json_top(*fs, "m.json", 1 << 20, {"weightsManifest", "modelTopology", "absent"});
    REQUIRE(top);
    CHECK_FALSE(top->array);
    CHECK(top->has == std::vector<bool>{true, true, false});
  }
}

TEST_CASE("sniff_json_top: one scan of a real file answers later asks; a key after 300 others is still found") {
  TempDir dir;
  std::string text = "{";
  for (int i = 0; i < 300; ++i) text += "\"k" + std::to_string(i) + "\": " + std::to_string(i) + ", ";
  text += R"("weight_map": {}})";
  write_file(dir / "index.json", bytes_of(text));
  const auto files = posix_file_system();
  // The first ask scans; the key past the 256 kept is found all the same.
  auto top = formats::sniff_json_top(*files, dir / "index.json", 1 << 20, {"weight_map", "k0"});
  REQUIRE(top);
  CHECK(top->has == std::vector<bool>{true, true});
  // A later ask for keys among the first 256 is answered from that scan; one past them scans
  // again and is exact.
  top = formats::sniff_json_top(*files, dir / "index.json", 1 << 20, {"k255", "absent"});
  REQUIRE(top);
  CHECK(top->has == std::vector<bool>{true, false});
  top = formats::sniff_json_top(*files, dir / "index.json", 1 << 20, {"k299", "weight_map"});
  REQUIRE(top);
  CHECK(top->has == std::vector<bool>{true, true});
  // The file rewritten (another identity): scanned again, never answered from the old scan.
  write_file(dir / "index.json", bytes_of(R"({"weightsManifest": []})"));
  top = formats::sniff_json_top(*files, dir / "index.json", 1 << 20, {"weight_map", "weightsManifest"});
  REQUIRE(top);
  CHECK(top->has == std::vector<bool>{false, true});
}

TEST_CASE("TFJS manifest through open_manifest: quantization scales split at every position are exact") {
  const std::vector<std::string> scales{"0.023198612531026206", "1.0000000000000002", "5e-324", "6.5E+2"};
  std::string weights;
  for (std::size_t i = 0; i < scales.size(); ++i)
    weights += (i ? "," : "") + std::string(R"({"name":"w\u00e9)") + std::to_string(i) +
               R"(","shape":[1],"dtype":"float32","quantization":{"dtype":"uint8","scale":)" + scales[i] +
               R"(,"min":-)" + scales[i] + "}}";
  const std::string text = R"([{"paths":["s.bin"],"weights":[)" + weights + "]}]";
  auto fs = std::make_shared<MemoryFileSystem>();
  fs->add_directory("m");
  fs->add_file("m/weights_manifest.json", bytes_of(text));
  fs->add_file("m/s.bin", std::vector<std::byte>(scales.size()));
  OpenOptions options;
  options.file_system = fs;
  ChunkSize chunk(1);
  for (std::size_t size = 1; size <= text.size() + 1; ++size) {
    INFO("chunk size " << size);
    chunk.set(size);
    const Manifest m = open_manifest("m/weights_manifest.json", options);
    REQUIRE(m.tensors.size() == scales.size());
    for (std::size_t i = 0; i < scales.size(); ++i) {
      INFO(scales[i]);
      CHECK(m.tensors[i].name == "w\xc3\xa9" + std::to_string(i));
      REQUIRE(m.tensors[i].quantization);
      CHECK(m.tensors[i].quantization->scale.at(0) == exact(scales[i]));
      CHECK(*m.tensors[i].quantization->min == -exact(scales[i]));
    }
  }
}

namespace {

// read_json_members with a TFJS-shaped StreamedItems: what each weight delivered was, by group.
struct Streamed {
  std::vector<std::pair<std::size_t, std::string>> items;  // holder, serialized item
  json::value tree;
};
Streamed stream_weights(std::string_view text) {
  const TextFile f(text);
  Streamed out;
  formats::StreamedItems weights;
  weights.within = "weightsManifest";
  weights.holder_depth_in_object = 3;
  weights.holder_depth_in_array = 2;
  weights.key = "weights";
  weights.each = [&](std::size_t holder, std::string_view, json::value&& item) {
    out.items.emplace_back(holder, json::serialize(item));
  };
  out.tree = formats::read_json_members(*f.file, 0, f.file->size(), "manifest", {"weightsManifest", "format"}, 1 << 20,
                                        &weights);
  return out;
}

}  // namespace

TEST_CASE("read_json_members streams each group's weights one at a time and keeps the rest") {
  const Streamed m = stream_weights(
      R"({"modelTopology": {"weightsManifest": [{"weights": [1]}]}, "format": [{"weights": [2]}],)"
      R"( "weightsManifest": [{"paths": ["a.bin"], "weights": [{"name": "w", "shape": [2]}, "x", 3.5, [1, [2]]]},)"
      R"( {"weights": [], "paths": ["b.bin"]}, {"paths": [], "weights": [{"name": "v"}]}]})");
  // Dropped members (modelTopology) and other kept members ("format") stream nothing.
  const std::vector<std::pair<std::size_t, std::string>> expected = {
      {0, R"({"name":"w","shape":[2]})"}, {0, R"("x")"}, {0, "3.5E0"}, {0, "[1,[2]]"}, {2, R"({"name":"v"})"}};
  CHECK(m.items == expected);
  // The groups stay, each "weights" an empty array; "format" is kept whole.
  CHECK(
      json::serialize(m.tree) ==
      R"({"format":[{"weights":[2]}],"weightsManifest":[{"paths":["a.bin"],"weights":[]},{"weights":[],"paths":["b.bin"]},)"
      R"({"paths":[],"weights":[]}]})");
  // A bare manifest (an array of groups) streams the same.
  const Streamed bare = stream_weights(R"([{"paths": ["a.bin"], "weights": [{"name": "u"}]}, {"weights": [7]}])");
  CHECK(bare.items == std::vector<std::pair<std::size_t, std::string>>{{0, R"({"name":"u"})"}, {1, "7"}});
  // A holder's number is its index in the array listing it, values that hold nothing counted too
  // (so a reader's errors name the right group).
  const Streamed after_others =
      stream_weights(R"({"weightsManifest": [7, "s", [{"weights": [0]}], {"weights": [{"name": "z"}]}]})");
  CHECK(after_others.items == std::vector<std::pair<std::size_t, std::string>>{{3, R"({"name":"z"})"}});
  CHECK(stream_weights(R"([null, {"weights": [1]}])").items ==
        std::vector<std::pair<std::size_t, std::string>>{{1, "1"}});
  // "weights" that is no array is kept as it is (the reader refuses it).
  CHECK(json::serialize(stream_weights(R"({"weightsManifest": [{"weights": "no"}]})").tree) ==
        R"({"weightsManifest":[{"weights":"no"}]})");
}

TEST_CASE("read_json_members refuses a group with two weights lists, naming the ambiguity") {
  const Error e = error_of([] {
    (void)stream_weights(R"({"weightsManifest": [{"weights": [{"name": "a"}], "paths": [], "weights": []}]})");
  });
  CHECK(e.code() == ErrorCode::bad_input);
  CHECK(std::string(e.what()).find("member 'weights' appears twice in one object") != std::string::npos);
}

TEST_CASE("a TFJS manifest of 200,000 weights opens with its weights never held as one tree") {
  // Every weight 0 elements, all in one group over one 4-byte shard: the records are the cost.
  std::string text = R"({"format": "graph-model", "weightsManifest": [{"paths": ["s.bin"], "weights": [)";
  for (int i = 0; i < 200000; ++i)
    text +=
        (i ? "," : "") + std::string(R"({"name": "w)") + std::to_string(i) + R"(", "shape": [0], "dtype": "float32"})";
  text += "]}]}";
  auto fs = std::make_shared<MemoryFileSystem>();
  fs->add_file("/m/model.json", bytes_of(text));
  fs->add_file("/m/s.bin", bytes_of("abcd"));
  OpenOptions options;
  options.file_system = fs;
  const Manifest m = open_manifest("/m/model.json", options);
  REQUIRE(m.tensors.size() == 200000);
  CHECK(m.tensors[199999].name == "w199999");
  CHECK(m.tensors[199999].bytes == 0);
  // A repeated name is still found, and named where the manifest lists it.
  text.replace(text.find(R"("w199999")"), 9, R"("w12")");
  fs->add_file("/m/model.json", bytes_of(text));
  const Error e = error_of([&] { (void)open_manifest("/m/model.json", options); });
  CHECK(std::string(e.what()).find(
            "tensor 'w12' (weightsManifest[0].weights[199999]): a weight of this name appears earlier") !=
        std::string::npos);
}
