// One check every backend's suite runs on its own device: verify() finds a byte changed in device
// memory after the load, naming the tensor and the offset.
#pragma once

#include <string>

namespace lwload::test {

// On `device` ("host", "opencl:0", "vulkan:0", ...): a model loaded staged, and direct where the
// device has host-visible memory, then one byte of a tensor overwritten in device memory through the
// device's own upload — at the tensor's first byte, past verify's first 4 MiB read-back chunk,
// and at its last byte — must make verify() fail with ErrorCode::device naming the tensor and
// that byte; restored, verify passes again. Zero-copy tensors are the file's own pages (no device
// copy to change). "null" holds nothing: verify must say it cannot verify, not pass.
void check_verify_finds_changed_byte(const std::string& device);

// The same for a tensor stored encoded and decoded on the host at load time (MediaPipe's sparse
// TFLite sample, densified): verify decodes the file's bytes again and must find the changed one.
void check_verify_finds_changed_decoded_byte(const std::string& device);

}  // namespace lwload::test
