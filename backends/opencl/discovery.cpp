// Device discovery: platforms → devices → DeviceInfo. Memory model and kind come from
// CL_DEVICE_HOST_UNIFIED_MEMORY (deprecated since 2.0 but still answered by current drivers) and
// CL_DEVICE_TYPE; vendor knowledge fills the gaps and adds the import rules the spec leaves open.
#include "backends/opencl/discovery.hpp"
#include "core/align.hpp"

#include <algorithm>
#include <initializer_list>
#include <string>
#include <utility>

#include "backends/host/capacity.hpp"
#include "backends/opencl/check.hpp"
#include "lwload/error.hpp"

namespace lwload::opencl {
namespace {

constexpr cl_uint kVendorIntel = 0x8086;
constexpr cl_uint kVendorAmd = 0x1002;
constexpr cl_uint kVendorNvidia = 0x10DE;
constexpr cl_uint kVendorArm = 0x13B5;
constexpr cl_uint kVendorQualcomm = 0x5143;

template <typename T>
T scalar_info(const cl::Device& device, cl_device_info param, std::string_view what) {
  T value{};
  check(clGetDeviceInfo(device(), param, sizeof value, &value, nullptr), "clGetDeviceInfo(", what, ")");
  return value;
}

// A string query (clGetDeviceInfo, clGetPlatformInfo): its size, then its text, without the
// trailing NULs. `call` opens the bracket that `what` is named in.
template <typename Query, typename Object, typename Param>
std::string info_string(Query query, std::string_view call, Object object, Param param, std::string_view what) {
  std::size_t size = 0;
  check(query(object, param, 0, nullptr, &size), call, what, ")");
  std::string text(size, '\0');
  check(query(object, param, size, text.data(), nullptr), call, what, ")");
  while (!text.empty() && text.back() == '\0') text.pop_back();
  return text;
}

std::string string_info(const cl::Device& device, cl_device_info param, std::string_view what) {
  return info_string(clGetDeviceInfo, "clGetDeviceInfo(", device(), param, what);
}

std::string platform_string(const cl::Platform& platform, cl_platform_info param, std::string_view what) {
  return info_string(clGetPlatformInfo, "clGetPlatformInfo(", platform(), param, what);
}

bool has_word(std::string_view list, std::string_view word) {
  std::size_t pos = 0;
  while ((pos = list.find(word, pos)) != std::string_view::npos) {
    const bool starts = pos == 0 || list[pos - 1] == ' ';
    const bool ends = pos + word.size() == list.size() || list[pos + word.size()] == ' ';
    if (starts && ends) return true;
    pos += word.size();
  }
  return false;
}

// The names of the bits set in `bits`, joined by `separator`.
std::string bit_names(cl_bitfield bits, std::initializer_list<std::pair<cl_bitfield, std::string_view>> names,
                      std::string_view separator) {
  std::string out;
  for (const auto& [bit, name] : names)
    if (bits & bit) out += str(out.empty() ? std::string_view{} : separator, name);
  return out;
}

std::string type_name(cl_device_type type) {
  const std::string names = bit_names(type,
                                      {{CL_DEVICE_TYPE_CPU, "CPU"},
                                       {CL_DEVICE_TYPE_GPU, "GPU"},
                                       {CL_DEVICE_TYPE_ACCELERATOR, "ACCELERATOR"},
                                       {CL_DEVICE_TYPE_CUSTOM, "CUSTOM"}},
                                      "|");
  return names.empty() ? "unknown" : names;
}

// Unified memory as the device says, or, where it no longer answers (some OpenCL 3.0 drivers
// reject the deprecated query), as its vendor and type imply.
struct UnifiedAnswer {
  bool unified;
  std::string source;
};

UnifiedAnswer unified_memory(const cl::Device& device, cl_device_type type, cl_uint vendor, std::string_view name) {
  cl_bool reported = CL_FALSE;
  if (clGetDeviceInfo(device(), CL_DEVICE_HOST_UNIFIED_MEMORY, sizeof reported, &reported, nullptr) == CL_SUCCESS)
    return {reported == CL_TRUE, "CL_DEVICE_HOST_UNIFIED_MEMORY"};
  if (type & CL_DEVICE_TYPE_CPU) return {true, "device type CPU"};
  if (vendor == kVendorArm || vendor == kVendorQualcomm) return {true, "vendor (mobile SoC GPU)"};
  if (vendor == kVendorIntel) return {name.find("Arc") == std::string_view::npos, "vendor (Intel)"};
  if (vendor == kVendorAmd || vendor == kVendorNvidia) return {false, "vendor (discrete GPU maker)"};
  return {false, "unknown: assumed discrete"};
}

DeviceKind kind_of(cl_device_type type, bool unified) {
  if (type & CL_DEVICE_TYPE_GPU) return unified ? DeviceKind::igpu : DeviceKind::dgpu;
  if (type & CL_DEVICE_TYPE_CPU) return DeviceKind::cpu;
  return DeviceKind::accelerator;
}

FoundDevice describe(const cl::Platform& platform, const cl::Device& device, std::uint32_t index) {
  FoundDevice found{platform, device, {}, {}};
  DeviceInfo& info = found.info;
  info.backend = "opencl";
  info.index = index;
  info.name = string_info(device, CL_DEVICE_NAME, "CL_DEVICE_NAME");

  const auto type = scalar_info<cl_device_type>(device, CL_DEVICE_TYPE, "CL_DEVICE_TYPE");
  const auto vendor_id = scalar_info<cl_uint>(device, CL_DEVICE_VENDOR_ID, "CL_DEVICE_VENDOR_ID");
  const auto base_align_bits =
      scalar_info<cl_uint>(device, CL_DEVICE_MEM_BASE_ADDR_ALIGN, "CL_DEVICE_MEM_BASE_ADDR_ALIGN");
  const auto max_alloc = scalar_info<cl_ulong>(device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, "CL_DEVICE_MAX_MEM_ALLOC_SIZE");
  const auto global_mem = scalar_info<cl_ulong>(device, CL_DEVICE_GLOBAL_MEM_SIZE, "CL_DEVICE_GLOBAL_MEM_SIZE");
  const std::string extensions = string_info(device, CL_DEVICE_EXTENSIONS, "CL_DEVICE_EXTENSIONS");
  const std::string vendor = string_info(device, CL_DEVICE_VENDOR, "CL_DEVICE_VENDOR");
  const std::string version = string_info(device, CL_DEVICE_VERSION, "CL_DEVICE_VERSION");
  const std::string platform_name = platform_string(platform, CL_PLATFORM_NAME, "CL_PLATFORM_NAME");
  const std::string platform_vendor = platform_string(platform, CL_PLATFORM_VENDOR, "CL_PLATFORM_VENDOR");

  // SVM capabilities exist from OpenCL 2.0; 1.x devices reject the query, which means "none".
  cl_device_svm_capabilities svm = 0;
  if (clGetDeviceInfo(device(), CL_DEVICE_SVM_CAPABILITIES, sizeof svm, &svm, nullptr) != CL_SUCCESS) svm = 0;

  const UnifiedAnswer unified = unified_memory(device, type, vendor_id, info.name);
  info.kind = kind_of(type, unified.unified);
  info.memory = unified.unified ? MemoryModel::unified : MemoryModel::discrete;

  found.import.arm_import = has_word(extensions, "cl_arm_import_memory");
  found.import.use_host_ptr = unified.unified;
  found.import.system_svm = unified.unified && (svm & CL_DEVICE_SVM_FINE_GRAIN_SYSTEM) != 0;

  // Intel's runtimes only skip the copy for 4096-aligned pointers and 64-byte-multiple sizes.
  const bool intel_rules =
      platform_vendor.find("Intel") != std::string::npos || (vendor_id == kVendorIntel && (type & CL_DEVICE_TYPE_GPU));
  DeviceCaps& caps = info.caps;
  caps.import_host_ptr = found.import.arm_import || found.import.use_host_ptr || found.import.system_svm;
  // CL_DEVICE_MEM_BASE_ADDR_ALIGN is in bits; an import must also start on a page.
  caps.sub_buffer_alignment = std::max<std::uint64_t>(1, base_align_bits / 8);
  caps.import_alignment = std::max<std::uint64_t>(page_size(), caps.sub_buffer_alignment);
  caps.size_multiple = intel_rules ? 64 : 1;
  caps.max_alloc = max_alloc;
  caps.host_visible_alloc = unified.unified;
  // Whether an import pins, per driver where it is known: a CPU device (PoCL, rusticl's llvmpipe)
  // uses the pointer as it is; Intel's GPU runtime makes a userptr (i915/xe pin its pages) and Arm's
  // cl_arm_import_memory pins what it imports. Other drivers do not say: counted as pinning.
  caps.import_pins = (type & CL_DEVICE_TYPE_CPU)                ? Pinning::no
                     : (intel_rules || found.import.arm_import) ? Pinning::yes
                                                                : Pinning::unknown;
  caps.pinned_staging = true;  // CL_MEM_ALLOC_HOST_PTR staging is pinned by every driver that pins
  caps.device_memory = global_mem;
  // OpenCL has no query for free memory. A CPU device's memory is the host's, so what the host
  // has left is its figure (PoCL and rusticl report all of RAM as global memory).
  if (type & CL_DEVICE_TYPE_CPU) caps.memory_available = host::host_capacity().bytes;

  const std::string svm_names = bit_names(svm,
                                          {{CL_DEVICE_SVM_COARSE_GRAIN_BUFFER, "coarse_grain_buffer"},
                                           {CL_DEVICE_SVM_FINE_GRAIN_BUFFER, "fine_grain_buffer"},
                                           {CL_DEVICE_SVM_FINE_GRAIN_SYSTEM, "fine_grain_system"}},
                                          " ");

  std::string import_names;
  if (found.import.arm_import) import_names += "arm_import ";
  if (found.import.use_host_ptr) import_names += "use_host_ptr ";
  if (found.import.system_svm) import_names += "svm ";
  if (!import_names.empty()) import_names.pop_back();

  info.details = {
      {"platform", platform_name},
      {"platform_vendor", platform_vendor},
      {"vendor", str(vendor, " (0x", std::hex, vendor_id, ")")},
      {"version", version},
      {"device_type", type_name(type)},
      {"memory_source", unified.source},
      {"base_addr_align", str(base_align_bits, " bits (", caps.sub_buffer_alignment, " bytes)")},
      {"max_mem_alloc", std::to_string(max_alloc)},
      {"global_mem", std::to_string(global_mem)},
      {"svm", svm_names.empty() ? "none" : svm_names},
      {"import", import_names.empty() ? "none" : import_names},
      {"extensions", extensions},
  };
  return found;
}

}  // namespace

std::vector<FoundDevice> discover_devices() {
  std::vector<FoundDevice> found;
  cl_uint platform_count = 0;
  // No ICD file, or an ICD loader with no platform behind it, means "no OpenCL here".
  if (clGetPlatformIDs(0, nullptr, &platform_count) != CL_SUCCESS || platform_count == 0) return found;
  std::vector<cl_platform_id> platforms(platform_count);
  check(clGetPlatformIDs(platform_count, platforms.data(), nullptr), "clGetPlatformIDs");

  for (cl_platform_id platform_id : platforms) {
    cl_uint device_count = 0;
    const cl_int status = clGetDeviceIDs(platform_id, CL_DEVICE_TYPE_ALL, 0, nullptr, &device_count);
    if (status == CL_DEVICE_NOT_FOUND || device_count == 0) continue;
    check(status, "clGetDeviceIDs");
    std::vector<cl_device_id> devices(device_count);
    check(clGetDeviceIDs(platform_id, CL_DEVICE_TYPE_ALL, device_count, devices.data(), nullptr), "clGetDeviceIDs");
    const cl::Platform platform(platform_id);
    for (cl_device_id device_id : devices)
      found.push_back(describe(platform, cl::Device(device_id), static_cast<std::uint32_t>(found.size())));
  }
  return found;
}

FoundDevice describe_device(cl_device_id device) {
  const std::vector<FoundDevice> listed = discover_devices();
  for (const FoundDevice& found : listed)
    if (found.device() == device) return found;
  cl_platform_id platform = nullptr;
  check(clGetDeviceInfo(device, CL_DEVICE_PLATFORM, sizeof platform, &platform, nullptr),
        "clGetDeviceInfo(CL_DEVICE_PLATFORM)", " of the application's device");
  return describe(cl::Platform(platform, /*retainObject=*/true), cl::Device(device, /*retainObject=*/true),
                  static_cast<std::uint32_t>(listed.size()));
}

}  // namespace lwload::opencl
