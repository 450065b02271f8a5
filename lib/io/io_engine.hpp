// Which read engine a load can use: io_uring is compiled in (LWLOAD_HAVE_IO_URING) but kernels
// and container sandboxes may refuse it at run time, so it is probed before use.
#pragma once

#include "io/layer.hpp"

#include <string>

namespace lwload::io {

struct UringProbe {
  bool usable = false;
  std::string note;  // why not, when not ("io_uring_queue_init: Operation not permitted")
};

// Tries to set up (and tears down) a small ring. Cached after the first call.
const UringProbe& probe_io_uring();

}  // namespace lwload::io
