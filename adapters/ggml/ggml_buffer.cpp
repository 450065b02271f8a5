// Slices of ggml backend buffers (ggml_buffer.hpp).
#include "ggml_buffer.hpp"

#include <utility>

#include "lwload/error.hpp"

namespace lwload::ggml {

SharedBuffer::SharedBuffer(ggml_backend_buffer_t buffer, std::span<const std::byte> imported)
    : buffer_(buffer), imported_(imported) {
  const ggml_init_params params{ggml_tensor_overhead(), nullptr, true};
  context_ = ggml_init(params);
  if (!context_) {
    ggml_backend_buffer_free(buffer_);
    fail(ErrorCode::out_of_memory, "ggml: ggml_init failed");
  }
  whole_ = ggml_new_tensor_1d(context_, GGML_TYPE_I8, static_cast<std::int64_t>(size()));
  if (ggml_backend_tensor_alloc(buffer_, whole_, ggml_backend_buffer_get_base(buffer_)) != GGML_STATUS_SUCCESS) {
    const std::uint64_t bytes = size();
    ggml_free(context_);
    ggml_backend_buffer_free(buffer_);
    fail(ErrorCode::device, "ggml: cannot address the buffer of ", bytes, " bytes");
  }
}

SharedBuffer::~SharedBuffer() {
  // The tensor over the buffer goes first (its context), then the buffer itself: an import lets go
  // of the file pages here, before the mapping under them is unmapped (the Weights' order).
  ggml_free(context_);
  ggml_backend_buffer_free(buffer_);
}

void SharedBuffer::write(std::uint64_t offset, const void* src, std::uint64_t bytes) {
  ggml_backend_tensor_set(whole_, src, offset, bytes);
}

void SharedBuffer::read(std::uint64_t offset, void* dst, std::uint64_t bytes) const {
  ggml_backend_tensor_get(whole_, dst, offset, bytes);
}

Slice::Slice(std::shared_ptr<SharedBuffer> shared, std::uint64_t offset, std::uint64_t size, std::string_view mechanism)
    : shared_(std::move(shared)), native_{shared_->buffer(), offset, size}, mechanism_(mechanism) {}

NativeType Slice::native_type() {
  static const NativeType type = register_native_type("ggml_buffer_slice");
  return type;
}

NativeHandle Slice::native() const noexcept {
  // The handle points at this slice's own record, which lives as long as the slice.
  return {native_type(), const_cast<lwload_ggml_slice*>(&native_)};
}

std::span<std::byte> Slice::begin_host_write() {
  ggml_backend_buffer_t buffer = shared_->buffer();
  if (!shared_->imported().empty() || !ggml_backend_buffer_is_host(buffer)) return {};
  return {static_cast<std::byte*>(ggml_backend_buffer_get_base(buffer)) + native_.offset, native_.size};
}

void Slice::write(std::uint64_t offset, const std::byte* src, std::uint64_t bytes) {
  shared_->write(native_.offset + offset, src, bytes);
}

void Slice::do_read_back(std::uint64_t offset, std::span<std::byte> dst) {
  if (!shared_->imported().empty()) {
    // The buffer is the file's pages: the kernel reads them, so a truncated file is an error.
    read_file_pages(dst, shared_->imported().data() + native_.offset + offset, offset, "ggml");
    return;
  }
  shared_->read(native_.offset + offset, dst.data(), dst.size());
}

}  // namespace lwload::ggml
