// Probing a ggml device's host-pointer imports (ggml_import.hpp).
#include "ggml_import.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "lwload/error.hpp"

#ifdef LWLOAD_GGML_BACKEND_IMPL
#include <ggml-backend-impl.h>
#endif

namespace lwload::ggml {
namespace {

constexpr std::uint64_t kLargestProbe = 1ull << 20;

// Whether the device has a buffer_from_host_ptr entry, and why we think so.
bool has_entry(ggml_backend_dev_t device, const ggml_backend_dev_props& props, std::string& how) {
#ifdef LWLOAD_GGML_BACKEND_IMPL
  ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(device);
  if (reg && reg->api_version == GGML_BACKEND_API_VERSION) {
    if (device->iface.buffer_from_host_ptr) return true;
    how = "its interface has no buffer_from_host_ptr entry (NULL)";
    return false;
  }
  if (!props.caps.buffer_from_host_ptr) {
    how = str("its registry's interface version (", reg ? reg->api_version : -1, ") is not this adapter's (",
              GGML_BACKEND_API_VERSION, ") and its properties do not say buffer_from_host_ptr");
    return false;
  }
  return true;
#else
  (void)device;
  if (props.caps.buffer_from_host_ptr) return true;
  how = "its properties do not say buffer_from_host_ptr (this build has no ggml-backend-impl.h to read the entry)";
  return false;
#endif
}

// A read-only shared mapping of `bytes` of a memfd: file pages, as the model's will be.
class ProbeMapping {
 public:
  explicit ProbeMapping(std::uint64_t bytes) : size_(bytes) {
    const int fd = ::memfd_create("lwload-ggml-probe", MFD_CLOEXEC);
    if (fd < 0) {
      error_ = str("memfd_create: ", std::strerror(errno));
      return;
    }
    if (::ftruncate(fd, static_cast<off_t>(bytes)) == 0) {
      void* p = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
      if (p != MAP_FAILED) data_ = static_cast<std::byte*>(p);
      else error_ = str("mmap: ", std::strerror(errno));
    } else {
      error_ = str("ftruncate: ", std::strerror(errno));
    }
    ::close(fd);
  }
  ProbeMapping(const ProbeMapping&) = delete;
  ProbeMapping& operator=(const ProbeMapping&) = delete;
  ~ProbeMapping() {
    if (data_) ::munmap(data_, size_);
  }
  std::byte* data() const noexcept { return data_; }
  const std::string& error() const noexcept { return error_; }

 private:
  std::byte* data_ = nullptr;
  std::uint64_t size_;
  std::string error_;
};

}  // namespace

ImportSupport probe_import(ggml_backend_dev_t device, const ggml_backend_dev_props& props) {
  ImportSupport support;
  support.entry = has_entry(device, props, support.how);
  if (!support.entry) return support;
  // Room for a pointer aligned to the largest probe but not to twice it, and that many bytes.
  ProbeMapping mapping(4 * kLargestProbe);
  if (!mapping.data()) {
    support.how = "no probe mapping could be made (" + mapping.error() + ")";
    return support;
  }
  const std::uint64_t page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  const auto base = reinterpret_cast<std::uintptr_t>(mapping.data());
  for (std::uint64_t alignment = page; alignment <= kLargestProbe; alignment *= 2) {
    const std::uintptr_t even = (base + 2 * alignment - 1) / (2 * alignment) * (2 * alignment);
    void* at = reinterpret_cast<void*>(even + alignment);
    ggml_backend_buffer_t buffer = ggml_backend_dev_buffer_from_host_ptr(device, at, alignment, alignment);
    if (!buffer) continue;
    ggml_backend_buffer_free(buffer);
    support.imports = true;
    support.alignment = alignment;
    support.how =
        str("buffer_from_host_ptr (a probe of read-only file pages accepted at ", alignment, "-byte alignment)");
    return support;
  }
  support.how = str("buffer_from_host_ptr declined every probe of read-only file pages (", page, " to ", kLargestProbe,
                    " bytes, at their own alignment)");
  return support;
}

}  // namespace lwload::ggml
