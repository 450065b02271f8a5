// opencl_naive_bench: lwload on an OpenCL device against what an application does without it —
// read the whole file into memory, then clCreateBuffer(CL_MEM_COPY_HOST_PTR) per tensor — and
// against the page-cache read limit (sequential pread). Repetitions of the variants run
// interleaved; the medians are printed, one line per variant, plus one JSON object.
//
//   opencl_naive_bench MODEL [--runs N] [--device opencl:N] [--placement auto|zero-copy|direct|staged]
//                      [--memory unified|discrete] [--staging-budget BYTES] [--skip-naive]
//
// Per variant: time to ready (every tensor usable on the device), throughput, and the growth of
// the process's peak resident set over the baseline taken just before the variant (after the
// device was opened): anonymous, file-backed and total. For lwload it also prints
// "peak - device buffers": the total growth minus the bytes of device buffers that live in this
// process (PoCL keeps "device" memory in host RAM), i.e. the loader's own host overhead.
#include "opencl_headers.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "example_main.hpp"
#include "lwload/lwload.hpp"
#include "lwload/profile.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string model;
  int runs = 5;
  std::string device = "opencl:0";
  std::optional<lwload::Placement> placement;
  std::optional<lwload::MemoryModel> memory;
  std::uint64_t staging_budget = 64ull << 20;
  bool skip_naive = false;
};

struct Sample {
  double seconds = 0;
  lwload::profile::MemoryFigures growth;  // peak over baseline
  std::uint64_t in_process_device_bytes = 0;
  std::string placement;
};

struct Variant {
  std::string name;
  std::function<Sample()> run;
  std::vector<Sample> samples;
};

// Measures `body` between a baseline taken just before it and the peak seen while it ran.
Sample measure(const std::function<void(Sample&)>& body) {
  lwload::profile::MemorySampler sampler(std::chrono::milliseconds(1));
  lwload::profile::reset_peak_rss();
  sampler.start();
  const auto baseline = lwload::profile::figures_of(lwload::profile::read_memory_now());
  Sample sample;
  const auto start = Clock::now();
  body(sample);
  sample.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  sampler.stop();
  auto peak = lwload::profile::figures_of(sampler.peak());
  peak.rss = std::max(peak.rss, sampler.peak().hwm);
  sample.growth = lwload::profile::growth(peak, baseline);
  return sample;
}

cl::Device find_cl_device(std::uint32_t index) {
  std::vector<cl::Platform> platforms;
  cl::Platform::get(&platforms);
  std::uint32_t seen = 0;
  for (const auto& platform : platforms) {
    std::vector<cl::Device> devices;
    if (platform.getDevices(CL_DEVICE_TYPE_ALL, &devices) != CL_SUCCESS) continue;
    for (const auto& device : devices)
      if (seen++ == index) return device;
  }
  lwload::fail(lwload::ErrorCode::usage, "no OpenCL device ", index);
}

// The naive loader: the whole file in memory, then one COPY_HOST_PTR buffer per tensor.
void naive_load(const lwload::Manifest& manifest, const cl::Context& context, const cl::CommandQueue& queue,
                std::vector<cl::Buffer>& buffers) {
  std::vector<std::vector<std::byte>> files;
  const auto fs = lwload::posix_file_system();
  for (const auto& path : manifest.files) {
    const auto file = fs->open(path);
    files.emplace_back(file->size());
    file->read_exact(0, files.back(), "whole file");
  }
  for (const auto& tensor : manifest.tensors) {
    if (tensor.pieces.size() != 1 || tensor.bytes == 0) continue;
    const lwload::Piece& piece = tensor.pieces[0];
    cl_int status = CL_SUCCESS;
    buffers.emplace_back(context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, piece.length,
                         files[piece.file].data() + piece.offset, &status);
    if (status != CL_SUCCESS)
      lwload::fail(lwload::ErrorCode::device, "clCreateBuffer(", tensor.name, ") failed: ", status);
  }
  if (queue.finish() != CL_SUCCESS) lwload::fail(lwload::ErrorCode::device, "clFinish failed");
}

std::uint64_t pread_file(const lwload::Manifest& manifest) {
  std::vector<std::byte> chunk(8 << 20);
  std::uint64_t total = 0;
  for (const auto& path : manifest.files) {
    const auto file = lwload::posix_file_system()->open(path);
    for (std::size_t got; (got = file->read_at(total, chunk)) > 0;) total += got;
  }
  return total;
}

template <typename Get>
double median(const std::vector<Sample>& samples, Get get) {
  std::vector<double> values;
  for (const auto& s : samples) values.push_back(static_cast<double>(get(s)));
  std::sort(values.begin(), values.end());
  const std::size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

std::uint64_t parse_bytes(const std::string& text) {
  std::uint64_t value = 0;
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc{}) lwload::fail(lwload::ErrorCode::usage, "bad size '", text, "'");
  const std::string unit(p, end);
  if (unit == "KiB") value <<= 10;
  else if (unit == "MiB") value <<= 20;
  else if (unit == "GiB") value <<= 30;
  else if (!unit.empty()) lwload::fail(lwload::ErrorCode::usage, "bad size unit '", unit, "'");
  return value;
}

Options parse(int argc, char** argv) {
  Options o;
  example::for_each_argument(argc, argv, [&](const std::string& arg, const auto& value) {
    if (arg == "--runs") o.runs = std::max(1, std::stoi(value()));
    else if (arg == "--device") o.device = value();
    else if (arg == "--placement") o.placement = lwload::parse_placement(value());
    else if (arg == "--memory")
      o.memory = value() == "discrete" ? lwload::MemoryModel::discrete : lwload::MemoryModel::unified;
    else if (arg == "--staging-budget") o.staging_budget = parse_bytes(value());
    else if (arg == "--skip-naive") o.skip_naive = true;
    else if (!arg.empty() && arg[0] == '-') lwload::fail(lwload::ErrorCode::usage, "unknown option ", arg);
    else o.model = arg;
  });
  if (o.model.empty()) lwload::fail(lwload::ErrorCode::usage, "usage: opencl_naive_bench MODEL [options]");
  return o;
}

int run(const Options& options) {
  const lwload::Manifest manifest = lwload::open_manifest(options.model);
  lwload::DeviceOverrides overrides;
  overrides.memory = options.memory;
  const auto device = lwload::open_device(options.device, overrides);
  if (device->info().backend != "opencl") lwload::fail(lwload::ErrorCode::usage, options.device, " is not OpenCL");
  const cl::Device cl_device = find_cl_device(device->info().index);
  const cl::Context context(cl_device);
  const cl::CommandQueue queue(context, cl_device);

  lwload::LoadOptions load_options;
  load_options.plan.force = options.placement;
  load_options.plan.staging_budget = options.staging_budget;
  const bool in_process = device->info().kind == lwload::DeviceKind::cpu;

  std::vector<Variant> variants;
  variants.push_back({"pread", [&] { return measure([&](Sample&) { pread_file(manifest); }); }, {}});
  if (!options.skip_naive)
    variants.push_back({"naive_cl",
                        [&] {
                          std::vector<cl::Buffer> buffers;
                          auto s = measure([&](Sample&) { naive_load(manifest, context, queue, buffers); });
                          s.in_process_device_bytes = in_process ? manifest.total_bytes() : 0;
                          return s;
                        },
                        {}});
  variants.push_back({"lwload",
                      [&] {
                        std::optional<lwload::Weights> weights;
                        return measure([&](Sample& s) {
                          weights.emplace(lwload::load(manifest, *device, load_options));
                          const lwload::Plan& plan = weights->plan();
                          s.in_process_device_bytes = in_process ? plan.device_bytes : 0;
                          const auto zc = plan.count(lwload::Placement::zero_copy);
                          const auto direct = plan.count(lwload::Placement::direct);
                          const auto staged = plan.count(lwload::Placement::staged);
                          s.placement = zc && !direct && !staged   ? "zero_copy"
                                        : direct && !zc && !staged ? "direct"
                                        : staged && !zc && !direct ? "staged"
                                                                   : "mixed";
                        });
                      },
                      {}});

  for (int r = 0; r < options.runs; ++r)
    for (auto& v : variants) v.samples.push_back(v.run());

  const double bytes = static_cast<double>(manifest.total_bytes());
  const double mib = 1 << 20;
  double naive_s = 0, pread_s = 0;
  std::string json = "{\"model\":\"" + options.model + "\",\"model_bytes\":" + std::to_string(manifest.total_bytes()) +
                     ",\"device\":\"" + device->info().id() + "\",\"memory\":\"" +
                     std::string(lwload::memory_model_name(device->info().memory)) +
                     "\",\"runs\":" + std::to_string(options.runs);
  std::printf("model %s: %.1f MiB, %zu tensors; device %s (%s, %s); %d runs, medians\n", options.model.c_str(),
              bytes / mib, manifest.tensors.size(), device->info().id().c_str(), device->info().name.c_str(),
              std::string(lwload::memory_model_name(device->info().memory)).c_str(), options.runs);
  for (const auto& v : variants) {
    const double s = median(v.samples, [](const Sample& x) { return x.seconds; });
    const double anon = median(v.samples, [](const Sample& x) { return x.growth.anon; });
    const double file = median(v.samples, [](const Sample& x) { return x.growth.file; });
    const double rss = median(v.samples, [](const Sample& x) { return x.growth.rss; });
    const double overhead = median(v.samples, [](const Sample& x) {
      return static_cast<double>(x.growth.rss) - static_cast<double>(x.in_process_device_bytes);
    });
    if (v.name == "naive_cl") naive_s = s;
    if (v.name == "pread") pread_s = s;
    std::printf(
        "  %-9s %9.2f ms  %8.0f MiB/s  peak growth: anon %7.1f MiB, file %7.1f MiB, rss %7.1f MiB, "
        "rss - in-process device buffers %7.1f MiB%s%s\n",
        v.name.c_str(), s * 1e3, bytes / mib / s, anon / mib, file / mib, rss / mib, overhead / mib,
        v.samples.back().placement.empty() ? "" : "  placement ", v.samples.back().placement.c_str());
    json += ",\"" + v.name + "\":{\"seconds\":" + std::to_string(s) + ",\"anon_growth\":" + std::to_string(anon) +
            ",\"file_growth\":" + std::to_string(file) + ",\"rss_growth\":" + std::to_string(rss) +
            ",\"rss_growth_minus_device_buffers\":" + std::to_string(overhead) + "}";
    if (v.name == "lwload") {
      if (naive_s > 0) std::printf("  lwload time / naive_cl time = 1/%.1f\n", naive_s / s);
      if (pread_s > 0) std::printf("  lwload throughput / pread throughput = %.0f %%\n", 100 * pread_s / s);
    }
  }
  std::printf("%s}\n", json.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return example::run_main("opencl_naive_bench", [&] { return run(parse(argc, argv)); });
}
