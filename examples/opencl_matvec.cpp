// opencl_matvec: the smallest real edge app on top of lwload. Like any inference engine it owns
// its OpenCL context and queue; it hands them to lwload (lwload/opencl.hpp), which loads a model
// into that context, then runs a matrix-vector product on one loaded weight matrix in its own
// context (reading the tensor where lwload put it: its cl_mem plus the tensor's offset inside it),
// and checks the result against the same product computed on the CPU from the file's bytes.
//
//   opencl_matvec [MODEL] [--tensor NAME] [--device opencl:N] [--placement auto|zero-copy|direct|staged]
//                 [--memory unified|discrete]
//
// Without MODEL it writes a small safetensors file of its own (finite floats; the weight it uses
// sits 64 KiB into a shared zero-copy region, so the offset path is exercised) and uses it.
// Exit status: 0 when the device agrees with the CPU, 1 when it does not or loading failed, 2 on
// bad usage.
#include "opencl_headers.hpp"

#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "example_main.hpp"
#include "lwload/lwload.hpp"
#include "lwload/opencl.hpp"

namespace {

struct Options {
  std::filesystem::path model;
  std::string tensor;
  std::string device = "opencl:0";
  std::optional<lwload::Placement> placement;
  std::optional<lwload::MemoryModel> memory;
};

// Removes the folder holding a model this example wrote for itself.
class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "lwload-matvec-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) lwload::fail(lwload::ErrorCode::io, "mkdtemp ", pattern, " failed");
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// A safetensors file with data starting on a page: "w0" [64, 256] F32 (64 KiB), then "w"
// [rows, cols] F32, then "bias" [3] F32. "w" starts on a page too, so on a unified device that
// imports host memory it shares w0's zero-copy region and is addressed as (region, 64 KiB) — the
// kernel's offset argument at work; "bias" is not page-aligned and goes direct.
void write_sample_model(const std::filesystem::path& path, std::uint32_t rows, std::uint32_t cols) {
  const std::uint64_t w0_bytes = 64 * 256 * 4;
  const std::uint64_t w_end = w0_bytes + std::uint64_t{rows} * cols * 4;
  std::string header = "{\"w0\":{\"dtype\":\"F32\",\"shape\":[64,256],\"data_offsets\":[0," + std::to_string(w0_bytes) +
                       "]},\"w\":{\"dtype\":\"F32\",\"shape\":[" + std::to_string(rows) + "," + std::to_string(cols) +
                       "],\"data_offsets\":[" + std::to_string(w0_bytes) + "," + std::to_string(w_end) +
                       "]},\"bias\":{\"dtype\":\"F32\"," + "\"shape\":[3],\"data_offsets\":[" + std::to_string(w_end) +
                       "," + std::to_string(w_end + 12) + "]}}";
  header.resize(4096 - 8, ' ');
  std::vector<float> data(w_end / 4 + 3);
  for (std::size_t i = 0; i < data.size(); ++i)
    data[i] = static_cast<float>(static_cast<int>((i * 2654435761u) % 2001) - 1000) / 997.0f;
  std::ofstream out(path, std::ios::binary);
  const std::uint64_t header_size = header.size();
  out.write(reinterpret_cast<const char*>(&header_size), 8);  // little-endian hosts only
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size() * 4));
  if (!out) lwload::fail(lwload::ErrorCode::io, "cannot write ", path.string());
}

// The matrix view of a tensor: GGUF lists ne0 (the contiguous dimension) first, the other formats
// list it last.
struct MatrixShape {
  std::uint64_t rows = 1, cols = 1;
};
std::optional<MatrixShape> matrix_shape(const lwload::Manifest& manifest, const lwload::TensorInfo& t) {
  if (t.dtype != lwload::DType::F32 || t.shape.size() < 2 || t.encoding != lwload::Encoding::raw) return {};
  MatrixShape m;
  const std::size_t contiguous = manifest.format == "gguf" ? 0 : t.shape.size() - 1;
  for (std::size_t i = 0; i < t.shape.size(); ++i)
    (i == contiguous ? m.cols : m.rows) *= static_cast<std::uint64_t>(t.shape[i]);
  if (m.rows == 0 || m.cols == 0) return {};
  return m;
}

std::vector<float> read_tensor_from_file(const lwload::Manifest& manifest, const lwload::TensorInfo& t) {
  std::vector<float> values(t.bytes / 4);
  auto* out = reinterpret_cast<std::byte*>(values.data());
  const auto fs = lwload::posix_file_system();
  for (const lwload::Piece& piece : t.pieces) {
    fs->open(manifest.files.at(piece.file))
        ->read_exact(piece.offset, {out, static_cast<std::size_t>(piece.length)}, "tensor data");
    out += piece.length;
  }
  return values;
}

const char* kKernel = R"(
  // One work item per row. The weights are addressed as bytes from the tensor's offset inside
  // its buffer, so any placement works: vload4 on uchar needs no float alignment.
  __kernel void matvec(__global const uchar* weights, ulong byte_offset, uint cols,
                       __global const float* x, __global float* y) {
    const size_t row = get_global_id(0);
    __global const uchar* w = weights + byte_offset + row * (ulong)cols * 4;
    float sum = 0.0f;
    for (uint c = 0; c < cols; ++c) sum += as_float(vload4(c, w)) * x[c];
    y[row] = sum;
  })";

void check_cl(cl_int status, const char* call) {
  if (status != CL_SUCCESS) lwload::fail(lwload::ErrorCode::device, call, " failed (", status, ")");
}

// The application's own OpenCL objects, made before lwload is involved.
struct AppContext {
  cl::Device device;
  cl::Context context;
  cl::CommandQueue queue;
};

// "opencl:N": the N-th device of all platforms, in the order `lwload devices` lists them.
AppContext make_app_context(const std::string& spec) {
  const std::string prefix = "opencl:";
  if (spec.rfind(prefix, 0) != 0) lwload::fail(lwload::ErrorCode::usage, "--device ", spec, " is not opencl:N");
  const std::size_t wanted = std::stoul(spec.substr(prefix.size()));
  std::vector<cl::Platform> platforms;
  cl::Platform::get(&platforms);
  std::vector<cl::Device> all;
  for (const cl::Platform& platform : platforms) {
    std::vector<cl::Device> devices;
    if (platform.getDevices(CL_DEVICE_TYPE_ALL, &devices) == CL_SUCCESS)
      all.insert(all.end(), devices.begin(), devices.end());
  }
  if (wanted >= all.size()) lwload::fail(lwload::ErrorCode::usage, spec, ": there are ", all.size(), " OpenCL devices");
  AppContext app{all[wanted], {}, {}};
  cl_int status = CL_SUCCESS;
  app.context = cl::Context(app.device, nullptr, nullptr, nullptr, &status);
  check_cl(status, "clCreateContext");
  app.queue = cl::CommandQueue(app.context, app.device, cl::QueueProperties::None, &status);
  check_cl(status, "clCreateCommandQueue");
  return app;
}

// Runs the kernel in the application's context, on the buffer lwload loaded into it.
std::vector<float> device_matvec(const AppContext& app, const lwload::OpenClTensor& weights, const MatrixShape& m,
                                 const std::vector<float>& x) {
  const cl::Context& context = app.context;
  const cl::Device& device = app.device;
  const cl::CommandQueue& queue = app.queue;
  cl_int status = CL_SUCCESS;
  cl::Program program(context, kKernel, false, &status);
  check_cl(status, "clCreateProgramWithSource");
  if (program.build({device}) != CL_SUCCESS) {
    std::cerr << program.getBuildInfo<CL_PROGRAM_BUILD_LOG>(device) << "\n";
    lwload::fail(lwload::ErrorCode::device, "clBuildProgram failed");
  }
  cl::Kernel kernel(program, "matvec", &status);
  check_cl(status, "clCreateKernel");
  cl::Buffer x_buffer(context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, x.size() * 4, const_cast<float*>(x.data()),
                      &status);
  check_cl(status, "clCreateBuffer(x)");
  cl::Buffer y_buffer(context, CL_MEM_WRITE_ONLY, m.rows * 4, nullptr, &status);
  check_cl(status, "clCreateBuffer(y)");
  check_cl(kernel.setArg(0, sizeof(cl_mem), &weights.mem), "clSetKernelArg(weights)");
  check_cl(kernel.setArg(1, static_cast<cl_ulong>(weights.offset)), "clSetKernelArg(offset)");
  check_cl(kernel.setArg(2, static_cast<cl_uint>(m.cols)), "clSetKernelArg(cols)");
  check_cl(kernel.setArg(3, x_buffer), "clSetKernelArg(x)");
  check_cl(kernel.setArg(4, y_buffer), "clSetKernelArg(y)");
  check_cl(queue.enqueueNDRangeKernel(kernel, cl::NullRange, cl::NDRange(m.rows)), "clEnqueueNDRangeKernel");
  std::vector<float> y(m.rows);
  check_cl(queue.enqueueReadBuffer(y_buffer, CL_TRUE, 0, m.rows * 4, y.data()), "clEnqueueReadBuffer");
  return y;
}

Options parse(int argc, char** argv) {
  Options o;
  example::for_each_argument(argc, argv, [&](const std::string& arg, const auto& value) {
    if (arg == "--tensor") o.tensor = value();
    else if (arg == "--device") o.device = value();
    else if (arg == "--placement") o.placement = lwload::parse_placement(value());
    else if (arg == "--memory") {
      const std::string m = value();
      if (m != "unified" && m != "discrete") lwload::fail(lwload::ErrorCode::usage, "--memory: unified or discrete");
      o.memory = m == "unified" ? lwload::MemoryModel::unified : lwload::MemoryModel::discrete;
    } else if (arg == "--help" || arg == "-h") {
      std::cout << "usage: opencl_matvec [MODEL] [--tensor NAME] [--device opencl:N] "
                   "[--placement auto|zero-copy|direct|staged] [--memory unified|discrete]\n";
      std::exit(0);
    } else if (!arg.empty() && arg[0] == '-') lwload::fail(lwload::ErrorCode::usage, "unknown option ", arg);
    else if (o.model.empty()) o.model = arg;
    else lwload::fail(lwload::ErrorCode::usage, "more than one MODEL");
  });
  return o;
}

int run(const Options& options) {
  std::optional<ScratchDir> scratch;
  std::filesystem::path model = options.model;
  std::string tensor_name = options.tensor;
  if (model.empty()) {
    scratch.emplace();
    model = scratch->path() / "matvec.safetensors";
    write_sample_model(model, 96, 300);
    if (tensor_name.empty()) tensor_name = "w";
  }

  const lwload::Manifest manifest = lwload::open_manifest(model);
  const lwload::TensorInfo* tensor = nullptr;
  std::optional<MatrixShape> shape;
  for (const auto& t : manifest.tensors) {
    if (!tensor_name.empty() && t.name != tensor_name) continue;
    if ((shape = matrix_shape(manifest, t))) {
      tensor = &t;
      break;
    }
    if (!tensor_name.empty())
      lwload::fail(lwload::ErrorCode::usage, "tensor '", tensor_name, "' is not a raw F32 matrix");
  }
  if (!tensor)
    lwload::fail(lwload::ErrorCode::usage, model.string(), ": no ", tensor_name.empty() ? "" : "such ",
                 "F32 matrix to multiply", tensor_name.empty() ? "" : lwload::str(" named '", tensor_name, "'"));

  lwload::DeviceOverrides overrides;
  overrides.memory = options.memory;
  const AppContext app = make_app_context(options.device);
  const auto device = lwload::open_opencl_device(app.context(), app.device(), app.queue(), overrides);

  lwload::LoadOptions load_options;
  load_options.plan.force = options.placement;
  const auto start = std::chrono::steady_clock::now();
  const lwload::Weights weights = lwload::load(manifest, *device, load_options);
  const double load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();

  const lwload::TensorHandle* handle = weights.find(tensor->name);
  if (!handle || !handle->buffer) lwload::fail(lwload::ErrorCode::device, "tensor '", tensor->name, "' was not loaded");
  const std::optional<lwload::OpenClTensor> in_cl = lwload::opencl_tensor(*handle);
  if (!in_cl)
    lwload::fail(lwload::ErrorCode::unsupported, "tensor '", tensor->name, "' is a ",
                 lwload::native_type_name(handle->native.type), " handle; this example runs kernels on cl_mem buffers");

  std::vector<float> x(shape->cols);
  for (std::size_t c = 0; c < x.size(); ++c) x[c] = static_cast<float>(static_cast<int>(c * 7 % 13) - 6) / 8.0f;
  const std::vector<float> y = device_matvec(app, *in_cl, *shape, x);

  // The CPU reference comes from the file, not from anything lwload produced.
  const std::vector<float> w = read_tensor_from_file(manifest, *tensor);
  double worst = 0;
  for (std::uint64_t r = 0; r < shape->rows; ++r) {
    double expected = 0, magnitude = 0;
    for (std::uint64_t c = 0; c < shape->cols; ++c) {
      const double term = static_cast<double>(w[r * shape->cols + c]) * x[c];
      expected += term;
      magnitude += std::fabs(term);
    }
    // float accumulation over `cols` terms: allow a few ulps per term of the magnitude.
    const double error = std::fabs(y[r] - expected) / (magnitude * 1e-5 * std::sqrt(double(shape->cols)) + 1e-30);
    if (!(error <= 1.0)) {
      std::cerr << "row " << r << ": device " << y[r] << ", CPU " << expected << "\n";
      return 1;
    }
    worst = std::max(worst, std::fabs(y[r] - expected));
  }

  std::cout << "device:    " << device->info().id() << " (" << device->info().name << ", "
            << lwload::memory_model_name(device->info().memory) << ", the application's own context)\n"
            << "model:     " << model.string() << " (" << manifest.format << ", " << manifest.tensors.size()
            << " tensors, loaded in " << load_ms << " ms)\n"
            << "tensor:    " << tensor->name << " " << shape->rows << "x" << shape->cols << " F32, placement "
            << lwload::placement_name(handle->placement) << " (" << handle->mechanism << "), offset " << handle->offset
            << " in its buffer\n"
            << "matvec:    " << shape->rows << " rows agree with the CPU (max |difference| " << worst << ")\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return example::run_main("opencl_matvec", [&] { return run(parse(argc, argv)); });
}
