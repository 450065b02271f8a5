// Model folders made to hurt, as strangers' downloads may be: files that link out of the folder
// (per format), FIFOs, device files and directories where data should be, and headers that ask
// for a million tensors. Each must end in a clear error (exit 3 through the CLI) quickly — never a
// hang, never a read outside the folder — unless the caller explicitly allows outside links.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

#include "lwload/error.hpp"
#include "lwload/manifest.hpp"
#include "lwload/memory_file_system.hpp"
#include "support/test_support.hpp"

namespace fs = std::filesystem;
using namespace lwload;

namespace {

// Copies a testdata model folder into a writable scratch folder.
fs::path copy_model(const test::TempDir& dir, const std::string& from, const std::string& to = "m") {
  const fs::path target = dir / to;
  fs::copy(test::testdata() / from, target, fs::copy_options::recursive);
  for (const auto& e : fs::recursive_directory_iterator(target))
    fs::permissions(e.path(), fs::perms::owner_write, fs::perm_options::add);
  fs::permissions(target, fs::perms::owner_write, fs::perm_options::add);
  return target;
}

// Runs `lwload ARGS` under a 120 s timeout (a hang fails the test instead of the suite). What is
// checked is that it ends, not how fast: an unoptimised or sanitizer build on a loaded CI machine
// is many times slower than a release build on an idle one.
int run_cli(const std::string& args, std::string* out) {
  const char* exe = std::getenv("LWLOAD_EXE");
  REQUIRE(exe);
  return test::run_command("timeout 120 " + std::string(exe) + " " + args + " 2>&1", out);
}

void expect_refused(const std::string& args, std::initializer_list<std::string> parts) {
  std::string out;
  const int status = run_cli(args, &out);
  INFO(args << "\n" << out);
  CHECK(status == 3);  // bad input: not 124 (timeout), not a crash
  for (const auto& part : parts) CHECK(out.find(part) != std::string::npos);
}

// Replaces `file` with a link to `target`.
void relink(const fs::path& file, const fs::path& target) {
  fs::remove(file);
  fs::create_symlink(target, file);
}

std::string safetensors_with(const std::string& name, std::size_t bytes) {
  const std::string header = "{\"" + name + "\":{\"dtype\":\"U8\",\"shape\":[" + std::to_string(bytes) +
                             "],\"data_offsets\":[0," + std::to_string(bytes) + "]}}";
  std::string padded = header + std::string((8 - header.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((padded.size() >> (8 * i)) & 0xff);
  return out + padded + std::string(bytes, 'x');
}

// A safetensors file's bytes from its header text and data size (the header padded to 8 bytes).
std::vector<std::byte> safetensors_file(const std::string& header_text, std::size_t data_bytes) {
  std::string header = header_text + std::string((8 - header_text.size() % 8) % 8, ' ');
  std::vector<std::byte> out;
  test::put_u64(out, header.size());
  test::put_bytes(out, header);
  out.resize(out.size() + data_bytes, std::byte{7});
  return out;
}

// `count` one-byte U8 tensors "model.layers.<i>.w", packed in order.
std::string many_tensors_header(std::size_t count) {
  std::string header = "{";
  header.reserve(count * 80);
  for (std::size_t i = 0; i < count; ++i) {
    const std::string n = std::to_string(i);
    header += (i ? ",\"model.layers." : "\"model.layers.") + n +
              ".w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[" + n + "," + std::to_string(i + 1) + "]}";
  }
  return header + "}";
}

// open_manifest of `bytes` as "m.safetensors" in memory, with `options` (its file system is set here).
Manifest open_in_memory(std::vector<std::byte> bytes, OpenOptions options = {}) {
  auto memory = std::make_shared<MemoryFileSystem>();
  memory->add_file("m.safetensors", std::move(bytes));
  options.file_system = memory;
  return open_manifest("m.safetensors", options);
}

std::uint64_t name_bytes(const Manifest& m) {
  return std::accumulate(m.tensors.begin(), m.tensors.end(), std::uint64_t{0},
                         [](std::uint64_t sum, const TensorInfo& t) { return sum + t.name.size(); });
}

}  // namespace

TEST_CASE("a safetensors header that lists a million tensors: every one read, in order, in a second or two") {
  // 81 MB of header text. The reader streams it (no DOM of the header), so this costs the
  // records themselves; the suite asserts the manifest, not the time it took.
  constexpr std::size_t kCount = 1'000'000;
  const Manifest m = open_in_memory(safetensors_file(many_tensors_header(kCount), kCount));
  REQUIRE(m.tensors.size() == kCount);
  CHECK(m.total_bytes() == kCount);
  const std::uint64_t data_start = m.tensors.front().pieces.front().offset;
  for (const std::size_t i : {std::size_t{0}, std::size_t{1}, std::size_t{123'456}, kCount - 1}) {
    const TensorInfo& t = m.tensors[i];
    CHECK(t.name == "model.layers." + std::to_string(i) + ".w");
    CHECK(t.dtype == DType::U8);
    CHECK(t.shape == std::vector<std::int64_t>{1});
    REQUIRE(t.pieces.size() == 1);
    CHECK(t.pieces[0].offset == data_start + i);
    CHECK(t.pieces[0].length == 1);
  }
  CHECK(m.find("model.layers.999999.w") == &m.tensors.back());
}

TEST_CASE("safetensors caps: tensor count and name bytes, per model, with the file and the field named") {
  const std::string header = R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
                             R"("bb":{"dtype":"U8","shape":[2],"data_offsets":[2,4]},)"
                             R"("ccc":{"dtype":"U8","shape":[2],"data_offsets":[4,6]}})";
  OpenOptions options;
  options.max_tensors = 3;
  options.max_name_bytes = 6;
  CHECK(open_in_memory(safetensors_file(header, 6), options).tensors.size() == 3);  // exactly at both caps

  options.max_tensors = 2;
  Error e = test::error_of([&] { open_in_memory(safetensors_file(header, 6), options); });
  CHECK(e.code() == ErrorCode::bad_input);
  CHECK(std::string(e.what()) ==
        "m.safetensors: header: tensor 'ccc' is one more than lwload's limit of 2 tensors per model "
        "(OpenOptions::max_tensors)");

  options.max_tensors = 3;
  options.max_name_bytes = 5;
  e = test::error_of([&] { open_in_memory(safetensors_file(header, 6), options); });
  CHECK(e.code() == ErrorCode::bad_input);
  CHECK(std::string(e.what()) ==
        "m.safetensors: header: the name of tensor 'ccc' takes the tensor names past lwload's limit of 5 bytes "
        "per model (OpenOptions::max_name_bytes; 3 bytes before it)");

  // One huge name: refused, and quoted short in the message.
  const std::string huge(2u << 20, 'n');
  options = {};
  options.max_name_bytes = 1u << 20;
  e = test::error_of([&] {
    open_in_memory(safetensors_file(R"({")" + huge + R"(":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})", 1),
                   options);
  });
  CHECK(e.code() == ErrorCode::bad_input);
  CHECK(std::string(e.what()).find("the name of tensor 'nnnn") != std::string::npos);
  CHECK(std::string(e.what()).find("...' (2097152 bytes) takes the tensor names past lwload's limit of 1048576") !=
        std::string::npos);
  CHECK(std::string(e.what()).size() < 400);
}

TEST_CASE("safetensors: a repeated tensor name is refused (a JSON object may repeat a key)") {
  const std::string header = R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
                             R"("a":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}})";
  const Error e = test::error_of([&] { open_in_memory(safetensors_file(header, 4)); });
  CHECK(e.code() == ErrorCode::bad_input);
  CHECK(std::string(e.what()) == "m.safetensors: header: tensor 'a' appears twice");
}

TEST_CASE("safetensors: tensors listed out of offset order come out in file order") {
  std::string header = "{";
  for (int i = 99; i >= 0; --i)
    header += (i == 99 ? "\"t" : ",\"t") + std::to_string(i) + R"(":{"dtype":"U8","shape":[1],"data_offsets":[)" +
              std::to_string(i) + "," + std::to_string(i + 1) + "]}";
  const Manifest m = open_in_memory(safetensors_file(header + "}", 100));
  REQUIRE(m.tensors.size() == 100);
  for (std::size_t i = 0; i < 100; ++i) CHECK(m.tensors[i].name == "t" + std::to_string(i));
}

TEST_CASE("sharded safetensors: the caps hold for the whole model, and for the index's weight_map") {
  test::TempDir dir;
  const fs::path m = dir / "m";
  fs::create_directory(m);
  test::write_file(m / "model-00001-of-00002.safetensors", safetensors_with("a", 16));
  test::write_file(m / "model-00002-of-00002.safetensors", safetensors_with("b", 16));
  test::write_file(m / "model.safetensors.index.json",
                   std::string(R"({"weight_map":{"a":"model-00001-of-00002.safetensors",)"
                               R"("b":"model-00002-of-00002.safetensors"}})"));
  OpenOptions options;
  options.max_tensors = 2;
  options.max_name_bytes = 2;
  CHECK(open_manifest(m, options).tensors.size() == 2);
  options.max_name_bytes = 1;  // each shard alone is within it; the two are not
  Error e = test::error_of([&] { open_manifest(m, options); });
  CHECK(std::string(e.what()).find("model-00002-of-00002.safetensors: header: the name of tensor 'b' takes") !=
        std::string::npos);
  options.max_tensors = 1;
  e = test::error_of([&] { open_manifest(m, options); });
  CHECK(e.code() == ErrorCode::bad_input);
  CHECK(std::string(e.what()) == (m / "model.safetensors.index.json").string() +
                                     ": weight_map: 2 tensors exceed lwload's limit of 1 tensors per model "
                                     "(OpenOptions::max_tensors)");
}

TEST_CASE("caps in every reader: one tensor or one name byte fewer than a real model needs is refused") {
  for (const fs::path& path : test::real_model_files()) {
    const Manifest full = open_manifest(path);
    if (full.tensors.empty()) continue;  // vocabulary-only GGUF files
    INFO(path.string());
    OpenOptions options;
    options.max_tensors = full.tensors.size();
    options.max_name_bytes = name_bytes(full);
    CHECK(open_manifest(path, options).tensors.size() == full.tensors.size());

    options.max_tensors = full.tensors.size() - 1;
    Error e = test::error_of([&] { open_manifest(path, options); });
    CHECK(e.code() == ErrorCode::bad_input);
    CHECK(std::string(e.what()).find(path.string() + ": ") == 0);
    CHECK(std::string(e.what()).find("tensors per model (OpenOptions::max_tensors)") != std::string::npos);

    options.max_tensors = full.tensors.size();
    options.max_name_bytes = name_bytes(full) - 1;
    e = test::error_of([&] { open_manifest(path, options); });
    CHECK(e.code() == ErrorCode::bad_input);
    CHECK(std::string(e.what()).find(path.string() + ": ") == 0);
    CHECK(std::string(e.what()).find("bytes per model (OpenOptions::max_name_bytes;") != std::string::npos);
  }
}

TEST_CASE("ONNX external data that links out of the folder, is a FIFO, a device or a directory") {
  if (!lwload::test::have_exe()) return;
  test::TempDir dir;
  const fs::path m = copy_model(dir, "onnx/mlp_external");
  const std::string model = (m / "model.onnx").string();
  fs::rename(m / "weights.bin", dir / "outside.bin");

  relink(m / "weights.bin", "/etc/passwd");
  expect_refused("inspect " + model, {"weights.bin: resolves to /etc/passwd, outside the model folder"});
  expect_refused("load " + model, {"resolves to /etc/passwd"});

  relink(m / "weights.bin", "/dev/zero");
  expect_refused("inspect " + model, {"resolves to /dev/zero"});
  expect_refused("inspect --allow-outside-links " + model, {"weights.bin: is a character device, not a regular file"});

  fs::remove(m / "weights.bin");
  REQUIRE(::mkfifo((m / "weights.bin").c_str(), 0600) == 0);
  expect_refused("inspect " + model, {"weights.bin: is a FIFO (named pipe), not a regular file"});
  expect_refused("load " + model, {"is a FIFO"});

  fs::remove(m / "weights.bin");
  fs::create_directory(m / "weights.bin");
  expect_refused("inspect " + model, {"is a directory, not a file"});

  // A shared cache linked in on purpose: refused by default, followed when allowed.
  fs::remove(m / "weights.bin");
  fs::create_symlink(fs::path("..") / "outside.bin", m / "weights.bin");
  expect_refused("load " + model, {"outside.bin, outside the model folder", "--allow-outside-links"});
  std::string out;
  CHECK(run_cli("load --allow-outside-links --verify " + model, &out) == 0);
  CHECK(out.find("verify: ok, 4 tensors") != std::string::npos);

  // A link that stays inside the folder is just a file.
  fs::rename(dir / "outside.bin", m / "real.bin");
  relink(m / "weights.bin", "real.bin");
  CHECK(run_cli("load --verify " + model, &out) == 0);
}

TEST_CASE("a sharded safetensors index whose shard links out of the folder") {
  if (!lwload::test::have_exe()) return;
  test::TempDir dir;
  const fs::path m = dir / "m";
  fs::create_directory(m);
  test::write_file(m / "model-00001-of-00002.safetensors", safetensors_with("a", 16));
  test::write_file(dir / "elsewhere.safetensors", safetensors_with("b", 16));
  fs::create_symlink(dir / "elsewhere.safetensors", m / "model-00002-of-00002.safetensors");
  test::write_file(m / "model.safetensors.index.json",
                   std::string(R"({"metadata":{},"weight_map":{"a":"model-00001-of-00002.safetensors",)"
                               R"("b":"model-00002-of-00002.safetensors"}})"));
  expect_refused("load --verify " + (m / "model.safetensors.index.json").string(),
                 {"model-00002-of-00002.safetensors: resolves to", "elsewhere.safetensors, outside the model folder"});
  std::string out;
  CHECK(run_cli("load --verify --allow-outside-links " + (m / "model.safetensors.index.json").string(), &out) == 0);
  CHECK(out.find("verify: ok, 2 tensors") != std::string::npos);

  // The same shard as a FIFO, and as a directory: refused as what they are.
  fs::remove(m / "model-00002-of-00002.safetensors");
  REQUIRE(::mkfifo((m / "model-00002-of-00002.safetensors").c_str(), 0600) == 0);
  expect_refused("inspect " + (m / "model.safetensors.index.json").string(),
                 {"model-00002-of-00002.safetensors: is a FIFO"});
  fs::remove(m / "model-00002-of-00002.safetensors");
  fs::create_directory(m / "model-00002-of-00002.safetensors");
  expect_refused("inspect " + (m / "model.safetensors.index.json").string(),
                 {"model-00002-of-00002.safetensors' (holding tensor 'b') is a directory, not a regular file"});
}

TEST_CASE("a TFJS shard that links out of the folder, or is a FIFO") {
  if (!lwload::test::have_exe()) return;
  test::TempDir dir;
  const fs::path m = copy_model(dir, "tfjs/sharded_quantized");
  const std::string model = (m / "weights_manifest.json").string();
  fs::rename(m / "group1-shard3of5.bin", dir / "shard3.bin");
  fs::create_symlink(dir / "shard3.bin", m / "group1-shard3of5.bin");
  expect_refused("inspect " + model, {"group1-shard3of5.bin: resolves to", "outside the model folder"});
  fs::remove(m / "group1-shard3of5.bin");
  REQUIRE(::mkfifo((m / "group1-shard3of5.bin").c_str(), 0600) == 0);
  expect_refused("inspect " + model, {"group1-shard3of5.bin: is a FIFO"});
}

TEST_CASE("the model file itself may not be a FIFO or a device either") {
  if (!lwload::test::have_exe()) return;
  test::TempDir dir;
  REQUIRE(::mkfifo((dir / "model.gguf").c_str(), 0600) == 0);
  expect_refused("inspect " + (dir / "model.gguf").string(), {"model.gguf: is a FIFO"});
  std::string out;
  CHECK(run_cli("inspect /dev/zero", &out) != 0);
  CHECK(out.find("/dev/zero: is a character device") != std::string::npos);
}

TEST_CASE("the containment rule through the library: OpenOptions::allow_outside_links") {
  test::TempDir dir;
  const fs::path m = copy_model(dir, "onnx/mlp_external");
  fs::rename(m / "weights.bin", dir / "outside.bin");
  fs::create_symlink(dir / "outside.bin", m / "weights.bin");
  try {
    (void)open_manifest(m / "model.onnx");
    FAIL("a link out of the folder was followed");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::bad_input);
    CHECK(std::string(e.what()).find("outside the model folder") != std::string::npos);
  }
  OpenOptions allow;
  allow.allow_outside_links = true;
  CHECK(open_manifest(m / "model.onnx", allow).tensors.size() == 4);
}
