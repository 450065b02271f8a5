// ort_run: runs an ONNX model with ONNX Runtime on deterministic inputs, its weights loaded by lwload
// (the adapter, lwload/onnxruntime.hpp) or by ONNX Runtime itself, and prints a digest of each
// output — so the two loaders can be compared bit for bit, and their memory and time side by side.
//
//   ort_run MODEL [--loader lwload|ort] [--prepack on|off] [--placement auto|zero-copy|direct]
//           [--runs N] [--dynamic N] [--shape NAME=D0xD1x...] [--json]
//
// Every graph input is filled with a fixed pattern for its type and shape (dynamic dimensions = 1,
// or N; --shape gives one input's whole shape: a model whose ops need longer inputs);
// each output prints one line "NAME SHA256" (of its bytes). --json adds a last line with the loader,
// peak RSS growth, anonymous memory growth at ready (before the first run), seconds to ready
// (session created, weights resident), the first run's seconds and the median of N more runs, and
// with --loader lwload how ONNX Runtime received the constants ({"zero_copy": [count, bytes], ...}).
// --loader ort is ONNX Runtime's own CreateSession(MODEL).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <onnxruntime_c_api.h>

#include "example_main.hpp"
#include "lwload/manifest.hpp"
#include "lwload/onnxruntime.hpp"
#include "sha256.hpp"

namespace {

using Clock = std::chrono::steady_clock;
const OrtApi* ort = nullptr;

void check(OrtStatus* status) {
  if (!status) return;
  const std::string message = ort->GetErrorMessage(status);
  ort->ReleaseStatus(status);
  lwload::fail(lwload::ErrorCode::device, "ONNX Runtime: ", message);
}

// A /proc/self/status field in bytes ("VmHWM", "RssAnon", ...).
std::uint64_t status_bytes(const std::string& field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind(field + ":", 0) == 0) return std::stoull(line.substr(field.size() + 1)) * 1024;
  return 0;
}

// The peak resident set starts again from the current one (Linux 4.0+: clear_refs 5).
void reset_peak() { std::ofstream("/proc/self/clear_refs") << "5"; }

std::size_t element_size(ONNXTensorElementDataType type) {
  switch (type) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_COMPLEX64: return 8;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT32: return 4;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16: return 2;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL: return 1;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_COMPLEX128: return 16;
    default: lwload::fail(lwload::ErrorCode::unsupported, "ort_run: an input of element type ", type);
  }
}

// Element i of the fixed pattern, written as `type`: small values every type holds exactly.
void put_element(ONNXTensorElementDataType type, std::size_t i, std::byte* at) {
  const int small = static_cast<int>((i * 7 + 3) % 11) - 5;  // -5 .. 5
  switch (type) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT: {
      const float v = static_cast<float>(small) / 4.0f;
      std::memcpy(at, &v, 4);
      return;
    }
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_COMPLEX64: {
      const double v = static_cast<double>(small) / 4.0;
      if (type == ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE) std::memcpy(at, &v, 8);
      else
        for (int k = 0; k < 2; ++k) {
          const float f = static_cast<float>(v);
          std::memcpy(at + 4 * k, &f, 4);
        }
      return;
    }
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16: {  // small / 4 in IEEE half: exact
      static constexpr std::uint16_t halves[11] = {0xbd00, 0xbc00, 0xba00, 0xb800, 0xb400, 0x0000,
                                                   0x3400, 0x3800, 0x3a00, 0x3c00, 0x3d00};
      std::memcpy(at, &halves[small + 5], 2);
      return;
    }
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16: {
      const float v = static_cast<float>(small) / 4.0f;
      std::uint32_t bits;
      std::memcpy(&bits, &v, 4);
      const std::uint16_t top = static_cast<std::uint16_t>(bits >> 16);
      std::memcpy(at, &top, 2);
      return;
    }
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL: *at = static_cast<std::byte>(i % 2); return;
    default: {  // integers: 0 .. 4, valid as indices, sizes and flags of most models' integer inputs
      const std::uint64_t v = i % 5;
      std::memcpy(at, &v, element_size(type));  // little-endian
      return;
    }
  }
}

struct Options {
  std::string model;
  std::string loader = "lwload";
  bool prepack = true;
  std::optional<lwload::Placement> placement;
  int runs = 3;
  std::int64_t dynamic = 1;                                 // the size of every dynamic dimension
  std::map<std::string, std::vector<std::int64_t>> shapes;  // --shape NAME=D0xD1x...: an input's whole shape
  bool json = false;
};

Options parse(int argc, char** argv) {
  Options o;
  example::for_each_argument(argc, argv, [&](const std::string& arg, auto value) {
    if (arg == "--loader") o.loader = value();
    else if (arg == "--prepack") {
      const std::string v = value();
      if (v != "on" && v != "off") lwload::fail(lwload::ErrorCode::usage, "--prepack: on or off, not '", v, "'");
      o.prepack = v == "on";
    } else if (arg == "--placement") {
      const std::string v = value();
      if (v != "auto") {
        o.placement = lwload::parse_placement(v);
        if (!o.placement)
          lwload::fail(lwload::ErrorCode::usage, "--placement: '", v, "' is not auto, zero-copy or direct");
      }
    } else if (arg == "--runs") o.runs = std::max(1, std::stoi(value()));
    else if (arg == "--shape") {
      const std::string v = value();
      const std::size_t eq = v.find('=');
      if (eq == std::string::npos) lwload::fail(lwload::ErrorCode::usage, "--shape: NAME=D0xD1x..., not '", v, "'");
      std::vector<std::int64_t>& dims = o.shapes[v.substr(0, eq)];
      std::istringstream in(v.substr(eq + 1));
      for (std::string d; std::getline(in, d, 'x');)
        if (!d.empty()) dims.push_back(std::stoll(d));
    } else if (arg == "--dynamic") o.dynamic = std::max<std::int64_t>(1, std::stoll(value()));
    else if (arg == "--json") o.json = true;
    else if (!arg.empty() && arg[0] == '-') lwload::fail(lwload::ErrorCode::usage, "unknown option ", arg);
    else o.model = arg;
  });
  if (o.model.empty())
    lwload::fail(lwload::ErrorCode::usage,
                 "usage: ort_run MODEL [--loader lwload|ort] [--prepack on|off] [--placement auto|zero-copy|direct] "
                 "[--runs N] [--dynamic N] [--shape NAME=D0xD1x...] [--json]");
  if (o.loader != "lwload" && o.loader != "ort")
    lwload::fail(lwload::ErrorCode::usage, "--loader: lwload or ort, not '", o.loader, "'");
  return o;
}

// The session's inputs, filled; released with it.
struct Inputs {
  std::vector<std::string> names;
  std::vector<std::vector<std::byte>> bytes;
  std::vector<OrtValue*> values;
  ~Inputs() {
    for (OrtValue* v : values) ort->ReleaseValue(v);
  }
};

void fill_inputs(OrtSession* session, OrtAllocator* allocator, const OrtMemoryInfo* memory, const Options& o,
                 Inputs& in) {
  std::size_t count = 0;
  check(ort->SessionGetInputCount(session, &count));
  for (std::size_t i = 0; i < count; ++i) {
    char* name = nullptr;
    check(ort->SessionGetInputName(session, i, allocator, &name));
    in.names.emplace_back(name);
    check(ort->AllocatorFree(allocator, name));
    OrtTypeInfo* type_info = nullptr;
    check(ort->SessionGetInputTypeInfo(session, i, &type_info));
    const OrtTensorTypeAndShapeInfo* tensor_info = nullptr;
    check(ort->CastTypeInfoToTensorInfo(type_info, &tensor_info));
    if (!tensor_info)
      lwload::fail(lwload::ErrorCode::unsupported, "ort_run: input '", in.names.back(), "' is not a tensor");
    ONNXTensorElementDataType type;
    check(ort->GetTensorElementType(tensor_info, &type));
    std::size_t rank = 0;
    check(ort->GetDimensionsCount(tensor_info, &rank));
    std::vector<std::int64_t> dims(rank);
    check(ort->GetDimensions(tensor_info, dims.data(), rank));
    ort->ReleaseTypeInfo(type_info);
    if (const auto given = o.shapes.find(in.names.back()); given != o.shapes.end()) dims = given->second;
    std::size_t elements = 1;
    for (auto& d : dims) {
      if (d < 1) d = o.dynamic;
      elements *= static_cast<std::size_t>(d);
    }
    const std::size_t size = element_size(type);
    std::vector<std::byte>& bytes = in.bytes.emplace_back(elements * size);
    for (std::size_t e = 0; e < elements; ++e) put_element(type, e, bytes.data() + e * size);
    OrtValue* value = nullptr;
    check(ort->CreateTensorWithDataAsOrtValue(memory, bytes.data(), bytes.size(), dims.data(), dims.size(), type,
                                              &value));
    in.values.push_back(value);
  }
}

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

int run(int argc, char** argv) {
  const Options o = parse(argc, argv);
  ort = OrtGetApiBase()->GetApi(ORT_API_VERSION);
  OrtEnv* raw_env = nullptr;
  check(ort->CreateEnv(ORT_LOGGING_LEVEL_ERROR, "ort_run", &raw_env));
  const std::unique_ptr<OrtEnv, void (*)(OrtEnv*)> env(raw_env, ort->ReleaseEnv);
  OrtSessionOptions* raw_options = nullptr;
  check(ort->CreateSessionOptions(&raw_options));
  const std::unique_ptr<OrtSessionOptions, void (*)(OrtSessionOptions*)> options(raw_options,
                                                                                 ort->ReleaseSessionOptions);
  check(ort->AddSessionConfigEntry(options.get(), "session.disable_prepacking", o.prepack ? "0" : "1"));
  OrtMemoryInfo* raw_memory = nullptr;
  check(ort->CreateCpuMemoryInfo(OrtDeviceAllocator, OrtMemTypeDefault, &raw_memory));
  const std::unique_ptr<OrtMemoryInfo, void (*)(OrtMemoryInfo*)> memory(raw_memory, ort->ReleaseMemoryInfo);
  OrtAllocator* allocator = nullptr;
  check(ort->GetAllocatorWithDefaultOptions(&allocator));

  // The baseline: ONNX Runtime started, nothing of the model loaded.
  reset_peak();
  const std::uint64_t rss0 = status_bytes("VmRSS"), anon0 = status_bytes("RssAnon");
  const auto start = Clock::now();
  std::optional<lwload::onnxruntime::Session> adapted;
  OrtSession* own = nullptr;
  if (o.loader == "lwload") {
    lwload::LoadOptions load;
    load.plan.force = o.placement;
    adapted.emplace(
        lwload::onnxruntime::create_session(*ort, env.get(), options.get(), lwload::open_manifest(o.model), load));
  } else {
    check(ort->CreateSession(env.get(), o.model.c_str(), options.get(), &own));
  }
  const double ready = seconds_since(start);
  const std::uint64_t anon_ready = status_bytes("RssAnon");
  OrtSession* session = adapted ? adapted->get() : own;

  Inputs in;
  fill_inputs(session, allocator, memory.get(), o, in);
  std::size_t output_count = 0;
  check(ort->SessionGetOutputCount(session, &output_count));
  std::vector<std::string> output_names;
  for (std::size_t i = 0; i < output_count; ++i) {
    char* name = nullptr;
    check(ort->SessionGetOutputName(session, i, allocator, &name));
    output_names.emplace_back(name);
    check(ort->AllocatorFree(allocator, name));
  }
  std::vector<const char*> in_names, out_names;
  for (const auto& n : in.names) in_names.push_back(n.c_str());
  for (const auto& n : output_names) out_names.push_back(n.c_str());

  std::vector<std::string> digests;
  std::vector<double> times;
  for (int r = 0; r <= o.runs; ++r) {
    std::vector<OrtValue*> outputs(output_count, nullptr);
    const auto t = Clock::now();
    check(ort->Run(session, nullptr, in_names.data(), in.values.data(), in.values.size(), out_names.data(),
                   out_names.size(), outputs.data()));
    times.push_back(seconds_since(t));
    for (std::size_t i = 0; i < output_count; ++i) {
      std::string digest = "non-tensor";
      int is_tensor = 0;
      check(ort->IsTensor(outputs[i], &is_tensor));
      if (is_tensor) {
        OrtTensorTypeAndShapeInfo* info = nullptr;
        check(ort->GetTensorTypeAndShape(outputs[i], &info));
        ONNXTensorElementDataType type;
        std::size_t elements = 0;
        check(ort->GetTensorElementType(info, &type));
        check(ort->GetTensorShapeElementCount(info, &elements));
        ort->ReleaseTensorTypeAndShapeInfo(info);
        void* data = nullptr;
        check(ort->GetTensorMutableData(outputs[i], &data));
        digest = example::sha256_hex({static_cast<const std::byte*>(data), elements * element_size(type)});
      }
      if (r == 0) digests.push_back(digest);
      else if (digests[i] != digest)
        lwload::fail(lwload::ErrorCode::device, "ort_run: output '", output_names[i], "' differs between runs");
      ort->ReleaseValue(outputs[i]);
    }
  }
  for (std::size_t i = 0; i < output_count; ++i) std::cout << output_names[i] << ' ' << digests[i] << '\n';
  if (o.json) {
    std::vector<double> steady(times.begin() + 1, times.end());
    std::sort(steady.begin(), steady.end());
    const std::uint64_t peak = status_bytes("VmHWM");
    std::ostringstream line;
    line << "{\"loader\": \"" << o.loader << "\", \"prepack\": " << (o.prepack ? "true" : "false")
         << ", \"peak_rss_growth\": " << (peak > rss0 ? peak - rss0 : 0)
         << ", \"anon_growth\": " << (anon_ready > anon0 ? anon_ready - anon0 : 0) << ", \"ready_seconds\": " << ready
         << ", \"first_run_seconds\": " << times[0] << ", \"run_seconds\": " << steady[steady.size() / 2];
    if (adapted) {  // how ONNX Runtime received the model's constants: count and bytes per way
      std::map<std::string_view, std::pair<std::size_t, std::uint64_t>> ways;
      for (const auto& r : adapted->routes()) {
        auto& [count, bytes] = ways[lwload::onnxruntime::way_name(r.way)];
        ++count;
        bytes += r.bytes;
      }
      line << ", \"constants\": {";
      const char* sep = "";
      for (const auto& [way, figures] : ways) {
        line << sep << '"' << way << "\": [" << figures.first << ", " << figures.second << ']';
        sep = ", ";
      }
      line << '}';
    }
    line << '}';
    std::cout << line.str() << '\n';
  }
  if (own) ort->ReleaseSession(own);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return example::run_main("ort_run", [&] { return run(argc, argv); });
}
