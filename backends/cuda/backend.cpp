// The cuda backend: NVIDIA GPUs through the driver API, loaded at run time (driver.hpp).
// Integrated devices (Jetson; CU_DEVICE_ATTRIBUTE_INTEGRATED) share the host's memory: zero_copy
// registers the planner's page-covering regions of the file mapping read-only, direct reads into
// pinned mapped memory. Discrete devices are loaded through the staging ring into cuMemAlloc memory.
#include <unistd.h>

#include "backends/builtin.hpp"
#include "lwload/backend_impl.hpp"
#include "backends/device_list.hpp"
#include "core/align.hpp"
#include "backends/cuda/buffers.hpp"
#include "backends/cuda/transfers.hpp"
#include "backends/session_device.hpp"
#include "lwload/cuda.hpp"
#include "lwload/error.hpp"

namespace lwload {
namespace {

using namespace cuda;

struct FoundDevice {
  DeviceInfo info;
  CUdevice device = 0;
};

std::vector<FoundDevice> discover(const Driver& d) {
  std::vector<FoundDevice> out;
  int count = 0;
  if (d.cuDeviceGetCount(&count) != CUDA_SUCCESS) return out;
  int version = 0;
  d.cuDriverGetVersion(&version);
  for (int i = 0; i < count; ++i) {
    FoundDevice f;
    if (d.cuDeviceGet(&f.device, i) != CUDA_SUCCESS) continue;
    char name[256] = {};
    d.cuDeviceGetName(name, sizeof name - 1, f.device);
    std::size_t memory = 0;
    d.cuDeviceTotalMem_v2(&memory, f.device);
    const auto attribute = [&](int which) {
      int value = 0;
      return d.cuDeviceGetAttribute(&value, which, f.device) == CUDA_SUCCESS ? value : 0;
    };
    const bool integrated = attribute(CU_DEVICE_ATTRIBUTE_INTEGRATED) != 0;
    const bool can_map = attribute(CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY) != 0;
    const bool read_only_register = attribute(CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED) != 0;
    DeviceInfo& info = f.info;
    info.backend = "cuda";
    info.index = static_cast<std::uint32_t>(i);
    info.name = name;
    info.kind = integrated ? DeviceKind::igpu : DeviceKind::dgpu;
    info.memory = integrated ? MemoryModel::unified : MemoryModel::discrete;
    // File pages are mapped PROT_READ: registering them needs the read-only flag.
    info.caps.import_host_ptr = integrated && can_map && read_only_register;
    info.caps.import_alignment = page_size();
    info.caps.host_visible_alloc = can_map;
    info.caps.pinned_staging = true;
    // cuMemHostRegister page-locks what it registers.
    info.caps.import_pins = Pinning::yes;
    info.caps.device_memory = memory;
    info.caps.max_alloc = memory;
    info.details.emplace_back("driver_version", std::to_string(version));
    info.details.emplace_back("integrated", integrated ? "yes" : "no");
    info.details.emplace_back("can_map_host_memory", can_map ? "yes" : "no");
    info.details.emplace_back("read_only_host_register", read_only_register ? "yes" : "no");
    if (integrated && !info.caps.import_host_ptr)
      info.details.emplace_back("zero_copy", "no: read-only host registration unsupported → direct");
    out.push_back(std::move(f));
  }
  return out;
}

// What the device has free now (cuMemGetInfo needs a context: the session's), then the overrides.
DeviceInfo with_free_memory(DeviceInfo info, const Session& session, const DeviceOverrides& overrides) {
  std::size_t free = 0, total = 0;
  {
    const ContextScope scope(session);
    if (session.driver().cuMemGetInfo_v2(&free, &total) == CUDA_SUCCESS) info.caps.memory_available = free;
  }
  info.details.emplace_back("memory_free", str(free, " bytes (cuMemGetInfo)"));
  return apply_overrides(std::move(info), overrides);
}

class CudaDevice final : public SessionDevice<Session, CudaStaging, Transfers> {
 public:
  CudaDevice(DeviceInfo info, std::shared_ptr<Session> session) : SessionDevice(std::move(info), session, session) {}

 protected:
  void do_upload(StagingBuffer& staging, std::uint64_t src_offset, DeviceBuffer& dst, std::uint64_t dst_offset,
                 std::uint64_t bytes, TransferDone done) override {
    auto& target = own<CudaBuffer>(dst, "upload into a buffer");
    in_flight_.submit(target.device_pointer() + dst_offset, staging.bytes().data() + src_offset,
                      static_cast<std::size_t>(bytes), std::move(done));
  }
};

class CudaBackend final : public BackendImpl {
 public:
  std::string_view name() const noexcept override { return "cuda"; }

  std::vector<DeviceInfo> devices() override {
    const Driver* d = driver(nullptr);
    return d ? infos_of(discover(*d)) : std::vector<DeviceInfo>{};
  }

  std::string absent_reason() const override {
    std::string why;
    const Driver* d = driver(&why);
    if (d && discover(*d).empty()) why = "the NVIDIA driver reports no CUDA device";
    return why;
  }

  std::unique_ptr<Device> open(std::uint32_t index, const DeviceOverrides& overrides) override {
    std::string why;
    const Driver* d = driver(&why);
    if (!d) fail(ErrorCode::usage, "cuda:", index, ": ", why);
    const auto found = discover(*d);
    const auto& device = device_at(found, index, "cuda", "CUDA");
    auto session = Session::open(*d, device.device, device.info.id());
    return std::make_unique<CudaDevice>(with_free_memory(device.info, *session, overrides), std::move(session));
  }
};

}  // namespace

std::shared_ptr<Backend> make_cuda_backend() { return std::make_shared<CudaBackend>(); }

NativeType cu_deviceptr_type() {
  static const NativeType type = register_native_type("cu_deviceptr");
  return type;
}

std::unique_ptr<Device> open_cuda_device(void* cu_context, void* cu_stream, std::uint32_t index,
                                         const DeviceOverrides& overrides) {
  std::string why;
  const Driver* d = driver(&why);
  if (!d) fail(ErrorCode::usage, "cuda: ", why);
  auto found = discover(*d);
  if (index >= found.size()) fail(ErrorCode::usage, "cuda:", index, ": no such device");
  auto session =
      Session::adopt(*d, static_cast<CUcontext>(cu_context), static_cast<CUstream>(cu_stream), found[index].info.id());
  return std::make_unique<CudaDevice>(with_free_memory(found[index].info, *session, overrides), std::move(session));
}

}  // namespace lwload
