// The ONNX Runtime adapter (lwload/onnxruntime.hpp, .h) under the real ONNX Runtime: the session's
// initializers are the model file's own read-only mapped pages (proven by address, in
// /proc/self/maps), ONNX Runtime computes on those bytes (a direct copy changed after the session
// is made changes its output), outputs are bit-identical to ONNX Runtime's own loading, and the C
// API's ownership holds. tests/onnxruntime/run_ort_tests.py runs the real and generated models.
// Built on the public API alone, as an application is (no internal test helpers).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "lwload/error.hpp"
#include "lwload/onnxruntime.h"
#include "lwload/onnxruntime.hpp"

namespace {

using lwload::onnxruntime::Route;

// tests/data (LWLOAD_TESTDATA, set by meson).
std::filesystem::path testdata() {
  const char* dir = std::getenv("LWLOAD_TESTDATA");
  REQUIRE_MESSAGE(dir, "LWLOAD_TESTDATA is not set: run the suite with meson test");
  return dir;
}

std::vector<std::byte> read_range(const std::filesystem::path& path, std::uint64_t offset, std::uint64_t length) {
  std::ifstream in(path, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(offset));
  std::vector<std::byte> bytes(length);
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(length));
  REQUIRE(in.gcount() == static_cast<std::streamsize>(length));
  return bytes;
}

std::vector<std::byte> read_file(const std::filesystem::path& path) {
  return read_range(path, 0, std::filesystem::file_size(path));
}

// lwload::Error thrown by `action`.
template <typename F>
lwload::Error error_of(F&& action) {
  try {
    action();
  } catch (const lwload::Error& e) {
    return e;
  }
  FAIL("no lwload::Error was thrown");
  return lwload::Error(lwload::ErrorCode::usage, "");
}

const OrtApi& ort() {
  static const OrtApi* api = OrtGetApiBase()->GetApi(ORT_API_VERSION);
  return *api;
}

void check(OrtStatus* status) {
  if (!status) return;
  const std::string message = ort().GetErrorMessage(status);
  ort().ReleaseStatus(status);
  FAIL("ONNX Runtime: " << message);
}

struct Env {
  OrtEnv* env = nullptr;
  OrtSessionOptions* options = nullptr;
  Env() {
    check(ort().CreateEnv(ORT_LOGGING_LEVEL_ERROR, "test_onnxruntime", &env));
    check(ort().CreateSessionOptions(&options));
    check(ort().AddSessionConfigEntry(options, "session.disable_prepacking", "1"));
  }
  ~Env() {
    ort().ReleaseSessionOptions(options);
    ort().ReleaseEnv(env);
  }
};

// The MLP of tests/data/onnx (x: [1, 64] float → y: [1, 32] float) on a fixed input.
std::vector<float> run_mlp(OrtSession* session) {
  std::vector<float> x(64);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(static_cast<int>(i % 9) - 4) / 8.0f;
  OrtMemoryInfo* memory = nullptr;
  check(ort().CreateCpuMemoryInfo(OrtDeviceAllocator, OrtMemTypeDefault, &memory));
  const std::int64_t dims[2] = {1, 64};
  OrtValue* input = nullptr;
  check(ort().CreateTensorWithDataAsOrtValue(memory, x.data(), x.size() * sizeof(float), dims, 2,
                                             ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, &input));
  ort().ReleaseMemoryInfo(memory);
  const char* in_names[] = {"x"};
  const char* out_names[] = {"y"};
  OrtValue* output = nullptr;
  check(ort().Run(session, nullptr, in_names, &input, 1, out_names, 1, &output));
  float* y = nullptr;
  check(ort().GetTensorMutableData(output, reinterpret_cast<void**>(&y)));
  std::vector<float> out(y, y + 32);
  ort().ReleaseValue(output);
  ort().ReleaseValue(input);
  return out;
}

// ONNX Runtime's own loading of `path`: the reference outputs.
std::vector<float> run_own(const Env& env, const std::filesystem::path& path) {
  OrtSession* session = nullptr;
  check(ort().CreateSession(env.env, path.c_str(), env.options, &session));
  std::vector<float> out = run_mlp(session);
  ort().ReleaseSession(session);
  return out;
}

// The /proc/self/maps line of the mapping holding `address`.
std::string mapping_of(const void* address) {
  std::ifstream maps("/proc/self/maps");
  const auto at = reinterpret_cast<std::uintptr_t>(address);
  for (std::string line; std::getline(maps, line);) {
    std::uintptr_t begin = 0, end = 0;
    char dash = 0;
    std::istringstream in(line);
    in >> std::hex >> begin >> dash >> end;
    if (at >= begin && at < end) return line;
  }
  return {};
}

const Route* route(const lwload::onnxruntime::Session& s, std::string_view name) {
  for (const Route& r : s.routes())
    if (r.name == name) return &r;
  return nullptr;
}

const std::filesystem::path inline_model() { return testdata() / "onnx" / "mlp_inline.onnx"; }

}  // namespace

TEST_CASE(
    "the session's initializers are the model file's read-only mapped pages, and its outputs ONNX Runtime's own") {
  Env env;
  const std::vector<float> own = run_own(env, inline_model());
  lwload::onnxruntime::Session s =
      lwload::onnxruntime::create_session(ort(), env.env, env.options, lwload::open_manifest(inline_model()));
  CHECK_FALSE(s.prepacking());
  // fc1.weight (32 KiB at file offset 175: not even 4-byte aligned) and fc2.weight (F16) are handed
  // over; the bias (512 bytes) and the shape constant stay in the graph, where shape inference reads them.
  for (const char* name : {"fc1.weight", "fc2.weight"}) {
    CAPTURE(name);
    const Route* r = route(s, name);
    REQUIRE(r);
    CHECK(r->way == Route::Way::zero_copy);
    const std::string line = mapping_of(r->data);
    CAPTURE(line);
    CHECK(line.find(" r--") != std::string::npos);  // read-only: no run can write through it
    CHECK(line.find("mlp_inline.onnx") != std::string::npos);
  }
  REQUIRE(route(s, "fc1.bias"));
  CHECK(route(s, "fc1.bias")->way == Route::Way::in_graph);
  CHECK(route(s, "fc1.bias")->reason.find("shape inference") != std::string::npos);
  CHECK(reinterpret_cast<std::uintptr_t>(route(s, "fc1.weight")->data) % 4 != 0);

  CHECK(run_mlp(s.get()) == own);
  // The bytes ONNX Runtime used are still the file's.
  const Route& fc1 = *route(s, "fc1.weight");
  CHECK(std::memcmp(fc1.data, read_range(inline_model(), 175, fc1.bytes).data(), fc1.bytes) == 0);
}

TEST_CASE(
    "ONNX Runtime computes on the file's own pages: the file rewritten under a zero-copy session changes its output") {
  // lwload's mapping is shared with the page cache: a session on those pages sees a write to the
  // file, a session on a copy (ONNX Runtime reading the bytes itself) does not.
  Env env;
  const std::vector<float> own = run_own(env, inline_model());
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("lwload_ort_w_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  struct Remove {
    std::filesystem::path p;
    ~Remove() { std::filesystem::remove_all(p); }
  } remove{dir};
  std::filesystem::copy_file(inline_model(), dir / "model.onnx");
  lwload::onnxruntime::Session s =
      lwload::onnxruntime::create_session(ort(), env.env, env.options, lwload::open_manifest(dir / "model.onnx"));
  const Route* fc1 = route(s, "fc1.weight");
  REQUIRE(fc1);
  REQUIRE(fc1->way == Route::Way::zero_copy);
  CHECK(run_mlp(s.get()) == own);
  // ONNX Runtime mapped none of the file itself (it maps external data MAP_PRIVATE, writable, when
  // it reads a reference): the only mappings of the model are lwload's read-only ones.
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);)
    if (line.find((dir / "model.onnx").string()) != std::string::npos) {
      CAPTURE(line);
      CHECK(line.find(" r--") != std::string::npos);
    }
  const int fd = ::open((dir / "model.onnx").c_str(), O_WRONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  const std::vector<char> zeros(fc1->bytes, 0);
  REQUIRE(::pwrite(fd, zeros.data(), zeros.size(), 175) == static_cast<ssize_t>(zeros.size()));  // fc1's bytes
  ::close(fd);
  CHECK(run_mlp(s.get()) != own);
}

TEST_CASE(
    "ONNX Runtime computes on lwload's bytes: a direct copy changed after the session is made changes the output") {
  Env env;
  const std::vector<float> own = run_own(env, inline_model());
  lwload::LoadOptions load;
  load.plan.force = lwload::Placement::direct;
  lwload::onnxruntime::Session s =
      lwload::onnxruntime::create_session(ort(), env.env, env.options, lwload::open_manifest(inline_model()), load);
  const Route* fc1 = route(s, "fc1.weight");
  REQUIRE(fc1);
  REQUIRE(fc1->way == Route::Way::direct);
  CHECK(mapping_of(fc1->data).find("mlp_inline.onnx") == std::string::npos);  // lwload's own memory
  CHECK(run_mlp(s.get()) == own);
  std::memset(const_cast<void*>(fc1->data), 0, fc1->bytes);  // every fc1 weight 0: y = relu(b1) · W2
  CHECK(run_mlp(s.get()) != own);
}

TEST_CASE("a model from a descriptor at an offset, and from memory, give ONNX Runtime's own outputs") {
  Env env;
  const std::vector<float> own = run_own(env, inline_model());
  // The model inside a larger file, 4099 bytes in: every tensor's page offset changes.
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("lwload_ort_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  struct Remove {
    std::filesystem::path p;
    ~Remove() { std::filesystem::remove_all(p); }
  } remove{dir};
  const std::vector<std::byte> bytes = read_file(inline_model());
  std::vector<std::byte> container(4099 + bytes.size(), std::byte{0x5a});
  std::memcpy(container.data() + 4099, bytes.data(), bytes.size());
  std::ofstream(dir / "app.bin", std::ios::binary)
      .write(reinterpret_cast<const char*>(container.data()), static_cast<std::streamsize>(container.size()));
  const int fd = ::open((dir / "app.bin").c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  {
    lwload::onnxruntime::Session s = lwload::onnxruntime::create_session(
        ort(), env.env, env.options, lwload::open_manifest_fd(fd, 4099, bytes.size()));
    ::close(fd);
    REQUIRE(route(s, "fc1.weight"));
    CHECK(route(s, "fc1.weight")->way == Route::Way::zero_copy);
    CHECK(mapping_of(route(s, "fc1.weight")->data).find("app.bin") != std::string::npos);
    CHECK(run_mlp(s.get()) == own);
  }
  // In memory there is no file ONNX Runtime's optimizers could read: constants under 64 KiB stay
  // in the graph, with the reason.
  lwload::onnxruntime::Session m = lwload::onnxruntime::create_session(
      ort(), env.env, env.options, lwload::open_manifest_memory(std::span<const std::byte>(bytes)));
  REQUIRE(route(m, "fc1.weight"));
  CHECK(route(m, "fc1.weight")->way == Route::Way::in_graph);
  CHECK(route(m, "fc1.weight")->reason.find("in memory") != std::string::npos);
  CHECK(run_mlp(m.get()) == own);
}

TEST_CASE("external data: the session's initializers are the weights file's pages") {
  Env env;
  const std::filesystem::path model = testdata() / "onnx" / "mlp_external";
  const std::vector<float> own = run_own(env, model / "model.onnx");
  lwload::onnxruntime::Session s =
      lwload::onnxruntime::create_session(ort(), env.env, env.options, lwload::open_manifest(model));
  REQUIRE(route(s, "fc1.weight"));
  CHECK(route(s, "fc1.weight")->way == Route::Way::zero_copy);
  CHECK(mapping_of(route(s, "fc1.weight")->data).find("weights.bin") != std::string::npos);
  CHECK(run_mlp(s.get()) == own);
}

TEST_CASE("a model that is not ONNX is refused by name") {
  Env env;
  const lwload::Error e = error_of([&] {
    lwload::onnxruntime::create_session(ort(), env.env, env.options,
                                        lwload::open_manifest(testdata() / "gguf" / "tiny-llama-f32-f16-q8.gguf"));
  });
  CHECK(e.code() == lwload::ErrorCode::unsupported);
  CHECK(std::string(e.what()).find("gguf, not ONNX") != std::string::npos);
}

TEST_CASE("C API: the session owns the OrtSession and the weights; routes and errors") {
  Env env;
  const std::vector<float> own = run_own(env, inline_model());
  OrtSession* session = nullptr;
  lwload_error* error = nullptr;
  lwload_ort_session* s =
      lwload_ort_session_open(&ort(), env.env, env.options, inline_model().c_str(), 0, &session, &error);
  REQUIRE(s);
  CHECK(error == nullptr);
  CHECK(run_mlp(session) == own);
  CHECK(lwload_ort_prepacking(s) == 0);
  bool found = false;
  for (std::size_t i = 0; i < lwload_ort_session_route_count(s); ++i) {
    lwload_ort_route r{};
    REQUIRE(lwload_ort_session_route(s, i, &r) == 0);
    if (std::string_view(r.name) == "fc1.weight") {
      found = true;
      CHECK(std::string_view(r.way) == "zero_copy");
      CHECK(r.bytes == 32768);
    }
  }
  CHECK(found);
  lwload_ort_route past{};
  CHECK(lwload_ort_session_route(s, lwload_ort_session_route_count(s), &past) == -1);
  lwload_ort_session_free(s);  // the OrtSession, then the values, then the weights

  CHECK(lwload_ort_session_open(&ort(), env.env, env.options, "/nonexistent/model.onnx", 0, &session, &error) ==
        nullptr);
  REQUIRE(error);
  CHECK(lwload_error_status(error) == LWLOAD_IO);
  CHECK(std::string(lwload_error_message(error)).find("/nonexistent/model.onnx") != std::string::npos);
  lwload_error_free(error);
  lwload_ort_session_free(nullptr);
}

namespace {

// Models written by onnx's own writer (/usr/bin/python3, python3-onnx and numpy), into `dir`:
// int16.onnx, a 2 KiB INT16 weight holding negative values cast to float (y: [1024]); if.onnx,
// an If (input c: bool) whose two branches each hold a 4 KiB FLOAT initializer named "w" with
// different values (y: [1024]).
constexpr const char* kWriteModels = R"PY(
import sys, numpy as np, onnx
from onnx import helper, numpy_helper, TensorProto as TP
out = sys.argv[1]
opset = [helper.make_opsetid('', 13)]
w = numpy_helper.from_array((np.arange(1024) * 37 % 65536 - 32768).astype(np.int16), 'w')
g = helper.make_graph([helper.make_node('Cast', ['w'], ['y'], to=TP.FLOAT)], 'g', [],
                      [helper.make_tensor_value_info('y', TP.FLOAT, [1024])], [w])
onnx.save(helper.make_model(g, opset_imports=opset), out + '/int16.onnx')
def branch(name, value):
    t = numpy_helper.from_array(np.full(1024, value, dtype=np.float32), 'w')
    return helper.make_graph([helper.make_node('Identity', ['w'], ['o_' + name])], name, [],
                             [helper.make_tensor_value_info('o_' + name, TP.FLOAT, [1024])], [t])
node = helper.make_node('If', ['c'], ['y'], then_branch=branch('then', 1.5), else_branch=branch('else', -2.0))
g = helper.make_graph([node], 'g', [helper.make_tensor_value_info('c', TP.BOOL, [])],
                      [helper.make_tensor_value_info('y', TP.FLOAT, [1024])])
onnx.save(helper.make_model(g, opset_imports=opset), out + '/if.onnx')
)PY";

struct ModelDir {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("lwload_ort_models_" + std::to_string(::getpid()));
  ModelDir() {
    std::filesystem::create_directories(path);
    std::ofstream(path / "write.py") << kWriteModels;
    const std::string command = "/usr/bin/python3 " + (path / "write.py").string() + " " + path.string();
    REQUIRE_MESSAGE(std::system(command.c_str()) == 0, command);
  }
  ~ModelDir() { std::filesystem::remove_all(path); }
};

// y: [1024] float of a session, given the bool input c when `c` is set.
std::vector<float> run_y(OrtSession* session, const bool* c) {
  OrtMemoryInfo* memory = nullptr;
  check(ort().CreateCpuMemoryInfo(OrtDeviceAllocator, OrtMemTypeDefault, &memory));
  OrtValue* input = nullptr;
  bool value = c ? *c : false;
  const std::int64_t scalar[1] = {1};  // no dimensions: a scalar
  if (c)
    check(ort().CreateTensorWithDataAsOrtValue(memory, &value, sizeof value, scalar, 0,
                                               ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL, &input));
  ort().ReleaseMemoryInfo(memory);
  const char* in_names[] = {"c"};
  const char* out_names[] = {"y"};
  OrtValue* output = nullptr;
  check(ort().Run(session, nullptr, in_names, c ? &input : nullptr, c ? 1 : 0, out_names, 1, &output));
  float* y = nullptr;
  check(ort().GetTensorMutableData(output, reinterpret_cast<void**>(&y)));
  std::vector<float> out(y, y + 1024);
  ort().ReleaseValue(output);
  if (input) ort().ReleaseValue(input);
  return out;
}

std::vector<float> run_own_y(const Env& env, const std::filesystem::path& path, const bool* c) {
  OrtSession* session = nullptr;
  check(ort().CreateSession(env.env, path.c_str(), env.options, &session));
  std::vector<float> out = run_y(session, c);
  ort().ReleaseSession(session);
  return out;
}

}  // namespace

TEST_CASE("an INT16 constant is handed to ONNX Runtime as INT16: negative values stay negative") {
  Env env;
  // No graph optimizations: the Cast runs on the handed-over value itself, not folded from the
  // graph's reference to the file at session creation.
  check(ort().SetSessionGraphOptimizationLevel(env.options, ORT_DISABLE_ALL));
  const ModelDir dir;
  const std::filesystem::path model = dir.path / "int16.onnx";
  const std::vector<float> own = run_own_y(env, model, nullptr);
  REQUIRE(own[0] == -32768.0f);  // the file's negative values, as ONNX Runtime reads them itself
  lwload::onnxruntime::Session s =
      lwload::onnxruntime::create_session(ort(), env.env, env.options, lwload::open_manifest(model));
  const Route* w = route(s, "w");
  REQUIRE(w);
  CHECK(w->way != Route::Way::in_graph);  // 2 KiB: handed over through AddInitializer
  CHECK(run_y(s.get(), nullptr) == own);
}

TEST_CASE(
    "one constant name in two graphs (an If's branches) stays in the graph: AddInitializer is keyed by name alone") {
  Env env;
  const ModelDir dir;
  const std::filesystem::path model = dir.path / "if.onnx";
  lwload::onnxruntime::Session s =
      lwload::onnxruntime::create_session(ort(), env.env, env.options, lwload::open_manifest(model));
  std::size_t named_w = 0;
  for (const Route& r : s.routes()) {
    if (r.name != "w") continue;
    ++named_w;
    CHECK(r.way == Route::Way::in_graph);
    CHECK(r.reason.find("AddInitializer is keyed by name alone") != std::string::npos);
  }
  CHECK(named_w == 2);
  for (const bool c : {true, false}) {
    CAPTURE(c);
    const std::vector<float> y = run_y(s.get(), &c);
    CHECK(y == run_own_y(env, model, &c));
    CHECK(y[0] == (c ? 1.5f : -2.0f));
  }
}
