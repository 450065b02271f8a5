// lwload::DeviceBuffer over a cl_mem: allocated device-local or host-visible memory, an imported
// host range, or a sub-buffer view of one of those. The native handle is {cl_mem_type(), cl_mem}.
#pragma once

#include "backends/opencl/layer.hpp"

#include <memory>
#include <string_view>

#include "backends/opencl/memory_account.hpp"
#include "backends/opencl/session.hpp"
#include "lwload/backend_impl.hpp"
#include "lwload/opencl.hpp"

namespace lwload::opencl {

class ClBuffer final : public DeviceBufferImpl {
 public:
  // `mem` is owned, and so is the device-memory `reservation` it uses (none for imports and
  // views). `parent`/`origin` are set for sub-buffers: OpenCL cannot make a sub-buffer of a
  // sub-buffer, so further views are cut from the parent at origin + offset.
  // `host_pages`: an import's own bytes (the mapped file pages the device works on), read back
  // through the guarded copy instead of by the driver.
  ClBuffer(std::shared_ptr<const Session> session, cl::Buffer mem, std::uint64_t size, std::string_view mechanism,
           Reservation reservation = {}, cl::Buffer parent = {}, std::uint64_t origin = 0,
           const std::byte* host_pages = nullptr);
  ~ClBuffer() override;

  std::uint64_t size() const noexcept override { return size_; }
  NativeHandle native() const noexcept override { return {cl_mem_type(), mem_()}; }
  std::string_view mechanism() const noexcept override { return mechanism_; }

  // Maps the whole buffer with CL_MAP_WRITE_INVALIDATE_REGION (nothing to read back first).
  std::span<std::byte> begin_host_write() override;
  void end_host_write() override;

  const cl::Buffer& mem() const noexcept { return mem_; }

 protected:
  void do_read_back(std::uint64_t offset, std::span<std::byte> dst) override;
  std::unique_ptr<DeviceBuffer> do_view(std::uint64_t offset, std::uint64_t size) override;

 private:
  void unmap() noexcept;

  std::shared_ptr<const Session> session_;
  cl::Buffer mem_;
  std::uint64_t size_;
  std::string_view mechanism_;
  const std::byte* host_pages_ = nullptr;
  cl::Buffer parent_;
  std::uint64_t origin_;
  void* mapped_ = nullptr;
  Reservation reservation_;  // device memory this buffer counts against CL_DEVICE_GLOBAL_MEM_SIZE
};

// A zero-copy range used through fine-grain system SVM: the host pointer itself is what kernels
// take (clSetKernelArgSVMPointer), so the handle is {cl_svm_ptr_type(), pointer}; no cl_mem exists.
class SvmRange final : public DeviceBufferImpl {
 public:
  explicit SvmRange(std::span<const std::byte> range) : range_(range) {}
  std::uint64_t size() const noexcept override { return range_.size(); }
  NativeHandle native() const noexcept override { return {cl_svm_ptr_type(), const_cast<std::byte*>(range_.data())}; }
  std::string_view mechanism() const noexcept override { return "svm"; }

 protected:
  void do_read_back(std::uint64_t offset, std::span<std::byte> dst) override;
  std::unique_ptr<DeviceBuffer> do_view(std::uint64_t offset, std::uint64_t size) override;

 private:
  std::span<const std::byte> range_;
};

// Fails with Error(usage) unless [offset, offset + length) lies inside a buffer of `size` bytes.

}  // namespace lwload::opencl
