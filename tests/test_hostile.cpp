// Model folders made to hurt, as strangers' downloads may be: files that link out of the folder
// (per format), FIFOs, device files and directories where data should be, and headers that ask
// for a million tensors. Each must end in a clear error (exit 3 through the CLI) quickly — never a
// hang, never a read outside the folder — unless the caller explicitly allows outside links.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <filesystem>
#include <string>

#include "lwload/error.hpp"
#include "lwload/manifest.hpp"
#include "support/test_support.hpp"

namespace fs = std::filesystem;
using namespace lwload;

namespace {

// Copies a testdata model folder into a writable scratch folder.
fs::path copy_model(const test::TempDir& dir, const std::string& from, const std::string& to = "m") {
  const fs::path target = dir / to;
  fs::copy(test::testdata() / from, target, fs::copy_options::recursive);
  for (const auto& e : fs::recursive_directory_iterator(target)) fs::permissions(e.path(), fs::perms::owner_write, fs::perm_options::add);
  fs::permissions(target, fs::perms::owner_write, fs::perm_options::add);
  return target;
}

// Runs `lwload ARGS` under a 20 s timeout (a hang fails the test instead of the suite).
int run_cli(const std::string& args, std::string* out) {
  const char* exe = std::getenv("LWLOAD_EXE");
  REQUIRE(exe);
  return test::run_command("timeout 20 " + std::string(exe) + " " + args + " 2>&1", out);
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

}  // namespace

TEST_CASE("ONNX external data that links out of the folder, is a FIFO, a device or a directory") {
  if (!std::getenv("LWLOAD_EXE")) return;
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
  if (!std::getenv("LWLOAD_EXE")) return;
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
}

TEST_CASE("a TFJS shard that links out of the folder, or is a FIFO") {
  if (!std::getenv("LWLOAD_EXE")) return;
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
  if (!std::getenv("LWLOAD_EXE")) return;
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
