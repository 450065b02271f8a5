#include "backends/cuda/transfers.hpp"

#include "lwload/error.hpp"

namespace lwload::cuda {

void Transfers::submit(CUdeviceptr dst, const void* src, std::size_t bytes, TransferDone done) {
  const Driver& d = session_->driver();
  CUevent event = nullptr;
  try {
    const ContextScope scope(*session_);
    session_->check(d.cuMemcpyHtoDAsync_v2(dst, src, bytes, session_->stream()), "cuMemcpyHtoDAsync",
                    str(bytes, " bytes, upload"));
    session_->check(d.cuEventCreate(&event, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
    const CUresult recorded = d.cuEventRecord(event, session_->stream());
    if (recorded != CUDA_SUCCESS) d.cuEventDestroy_v2(event);
    session_->check(recorded, "cuEventRecord");
  } catch (...) {
    done(std::current_exception());
    return;
  }
  auto wait = [session = session_, event, bytes]() -> std::exception_ptr {
    const ContextScope scope(*session);
    const CUresult r = session->driver().cuEventSynchronize(event);
    session->driver().cuEventDestroy_v2(event);
    try {
      session->check(r, "cuEventSynchronize", str(bytes, " bytes, upload"));
    } catch (...) {
      return std::current_exception();
    }
    return nullptr;
  };
  completions_.push(std::move(wait), std::move(done));
}

}  // namespace lwload::cuda
