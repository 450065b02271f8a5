#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <algorithm>
#include <doctest/doctest.h>

#include "test_support.hpp"

#include "core/align.hpp"

#include <boost/json.hpp>

#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace lwload::test {
namespace {

// LWLOAD_PAGE_SIZE=BYTES: the suite runs as on a kernel with that page size (core/align's seam;
// tests/meson.build runs suites at 16 and 64 KiB). A size this machine cannot stand in for (not a
// power-of-two multiple of its own) skips the suite: exit status 77.
const bool g_page_size_set = [] {
  const char* env = std::getenv("LWLOAD_PAGE_SIZE");
  if (!env || !*env) return false;
  const auto bytes = static_cast<std::size_t>(std::strtoull(env, nullptr, 0));
  if (!lwload::testing::set_page_size(bytes)) {
    std::fprintf(stderr, "LWLOAD_PAGE_SIZE=%s: not a power-of-two multiple of this system's %zu-byte pages; skipped\n",
                 env, lwload::system_page_size());
    std::_Exit(77);
  }
  std::fprintf(stderr, "page size: %zu bytes (LWLOAD_PAGE_SIZE; the system's is %zu)\n", page_size(),
               lwload::system_page_size());
  return true;
}();

}  // namespace

std::filesystem::path testdata() {
  const char* env = std::getenv("LWLOAD_TESTDATA");
  return env ? std::filesystem::path(env) : std::filesystem::path(LWLOAD_TESTDATA_DEFAULT);
}

std::vector<std::filesystem::path> real_model_files() {
  std::vector<std::filesystem::path> models;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(testdata())) {
    const auto& p = entry.path();
    const std::string ext = p.extension().string();
    if (ext == ".safetensors" || ext == ".gguf" || ext == ".onnx" || ext == ".tflite" || p.filename() == "model.json")
      models.push_back(p);
  }
  std::sort(models.begin(), models.end());
  return models;
}

TempDir::TempDir() {
  const char* base = std::getenv("LWLOAD_SCRATCH");
  std::filesystem::path root = base ? base : std::filesystem::temp_directory_path();
  std::filesystem::create_directories(root);
  std::string pattern = (root / "lwload-test-XXXXXX").string();
  if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed under " + root.string());
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

void write_file(const std::filesystem::path& path, std::span<const std::byte> bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

void write_file(const std::filesystem::path& path, std::string_view text) {
  write_file(path, std::as_bytes(std::span(text.data(), text.size())));
}

std::vector<std::byte> read_range(const std::filesystem::path& path, std::uint64_t offset, std::uint64_t length) {
  std::ifstream in(path, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(offset));
  std::vector<std::byte> bytes(length);
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(length));
  if (static_cast<std::uint64_t>(in.gcount()) != length) throw std::runtime_error("short read of " + path.string());
  return bytes;
}

std::vector<std::byte> read_file(const std::filesystem::path& path) {
  return read_range(path, 0, std::filesystem::file_size(path));
}

int run_command(const std::string& command, std::string* out) {
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return -1;
  std::array<char, 4096> buffer{};
  std::size_t n = 0;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0)
    if (out) out->append(buffer.data(), n);
  const int status = ::pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

namespace {
class CountingFile final : public RandomAccessFile {
 public:
  CountingFile(std::unique_ptr<RandomAccessFile> inner, std::uint64_t& counter)
      : inner_(std::move(inner)), counter_(counter) {}
  const std::filesystem::path& path() const noexcept override { return inner_->path(); }
  std::uint64_t size() const override { return inner_->size(); }
  std::size_t read_at(std::uint64_t offset, std::span<std::byte> dst) const override {
    const std::size_t n = inner_->read_at(offset, dst);
    counter_ += n;
    return n;
  }
  int native_handle() const noexcept override { return inner_->native_handle(); }

 private:
  std::unique_ptr<RandomAccessFile> inner_;
  std::uint64_t& counter_;
};
}  // namespace

std::unique_ptr<RandomAccessFile> CountingFileSystem::open(const std::filesystem::path& path, FileOpenFlags flags) {
  return std::make_unique<CountingFile>(inner_->open(path, flags), bytes_read);
}

int run_lwload(const std::string& args, std::string* out) {
  const char* exe = std::getenv("LWLOAD_EXE");
  if (!exe) throw std::runtime_error("LWLOAD_EXE is not set (run the suite through meson test)");
  return run_command(std::string("'") + exe + "' " + args + " 2>/dev/null", out);
}

bool required(std::string_view what) {
  const char* list = std::getenv("LWLOAD_REQUIRE");
  if (!list) return false;
  std::string_view rest = list;
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    if (item == what || item == "all") return true;
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
  return false;
}

bool available(std::string_view what, bool present, std::string_view why) {
  if (present) return true;
  if (required(what)) FAIL("LWLOAD_REQUIRE names '", std::string(what), "' but it is missing: ", std::string(why));
  MESSAGE("SKIP ", std::string(what), ": ", std::string(why));
  return false;
}

bool can_limit_address_space() {
  return available("rlimit_as", !kAddressSanitizer, "AddressSanitizer's shadow memory is reserved address space");
}

bool have_exe() {
  return available("exe", std::getenv("LWLOAD_EXE") != nullptr,
                   "LWLOAD_EXE is not set (the CLI is not built, or the suite was not run by meson test)");
}

std::vector<std::byte> counting_bytes(std::size_t n, std::uint8_t start) {
  std::vector<std::byte> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<std::byte>(static_cast<std::uint8_t>(start + i));
  return out;
}

std::vector<std::byte> marked_bytes(std::size_t n, std::uint8_t start) {
  std::vector<std::byte> bytes = counting_bytes(n, start);
  for (std::size_t i = 0; i < n; ++i)
    bytes[i] ^= static_cast<std::byte>(static_cast<std::uint8_t>((i >> 8) * 151u + (i >> 16) * 29u));
  return bytes;
}

std::vector<std::byte> slice(const std::vector<std::byte>& bytes, std::uint64_t offset, std::uint64_t length) {
  return {bytes.begin() + static_cast<std::ptrdiff_t>(offset),
          bytes.begin() + static_cast<std::ptrdiff_t>(offset + length)};
}

void put_u8(std::vector<std::byte>& out, std::uint8_t v) { out.push_back(static_cast<std::byte>(v)); }
void put_u16(std::vector<std::byte>& out, std::uint16_t v) {
  for (int i = 0; i < 2; ++i) put_u8(out, static_cast<std::uint8_t>(v >> (8 * i)));
}
void put_u32(std::vector<std::byte>& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) put_u8(out, static_cast<std::uint8_t>(v >> (8 * i)));
}
void put_u64(std::vector<std::byte>& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) put_u8(out, static_cast<std::uint8_t>(v >> (8 * i)));
}
void put_bytes(std::vector<std::byte>& out, std::string_view s) {
  for (char c : s) out.push_back(static_cast<std::byte>(c));
}

std::size_t check_against_reference(const std::filesystem::path& model, const std::string& format,
                                    const Manifest& manifest, const Weights& weights, const std::string& options) {
  TempDir reference;
  const char* root = std::getenv("LWLOAD_SOURCE_ROOT");
  REQUIRE_MESSAGE(root != nullptr, "LWLOAD_SOURCE_ROOT is not set (run the suite through meson test)");
  const std::filesystem::path script = std::filesystem::path(root) / "tests" / "real" / ("reference_" + format + ".py");
  std::string out;
  REQUIRE_MESSAGE(run_command(std::string(kPython) + " " + script.string() + " " + model.string() + " " +
                                  reference.path().string() + " " + options + " 2>&1",
                              &out) == 0,
                  out);
  const auto text = read_file(reference / "index.json");
  const boost::json::array index =
      boost::json::parse(std::string_view(reinterpret_cast<const char*>(text.data()), text.size())).as_array();
  REQUIRE(manifest.tensors.size() == index.size());
  for (std::size_t i = 0; i < index.size(); ++i) {
    const boost::json::object& ref = index[i].as_object();
    const std::string name(ref.at("name").as_string());
    INFO("tensor ", name);
    const TensorInfo& t = manifest.tensors[i];
    CHECK(t.name == name);  // same names, same order
    CHECK(dtype_name(t.dtype) == std::string_view(ref.at("dtype").as_string()));
    std::vector<std::int64_t> shape;
    for (const auto& d : ref.at("shape").as_array()) shape.push_back(d.to_number<std::int64_t>());
    CHECK(t.shape == shape);
    if (ref.at("file").is_null()) {
      CHECK(t.dtype == DType::STRING);
      continue;
    }
    const auto expected = read_file(reference / std::string(ref.at("file").as_string()));
    const TensorHandle* h = weights.find(name);
    REQUIRE(h != nullptr);
    std::vector<std::byte> got(h->bytes);
    weights.read_back(*h, 0, got);
    CHECK(got == expected);
  }
  return index.size();
}

}  // namespace lwload::test
