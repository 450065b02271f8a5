// One check every backend's suite runs on its own device: a zero-copy file truncated under a
// finished load, with the application's own SIGBUS handler installed.
#pragma once

#include <string>

namespace lwload::test {

// On `device`: a model loaded (zero_copy where the device imports), then its file cut to one page
// while the application's SIGBUS handler is installed. verify() is Error(io) naming the file;
// read-back of every zero_copy tensor past the cut is Error(io) naming the file and the tensor;
// tensors in device memory still read back; and no signal ever reaches the application's handler.
void check_truncation_after_load(const std::string& device);

}  // namespace lwload::test
