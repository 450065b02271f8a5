#include "backends/cuda/session.hpp"

namespace lwload::cuda {

std::shared_ptr<Session> Session::open(const Driver& d, CUdevice device, std::string label) {
  std::shared_ptr<Session> s(new Session(d, std::move(label)));
  s->device_ = device;
  s->check(d.cuDevicePrimaryCtxRetain(&s->context_, device), "cuDevicePrimaryCtxRetain");
  s->owns_context_ = true;
  const ContextScope scope(*s);
  s->check(d.cuStreamCreate(&s->stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  s->owns_stream_ = true;
  return s;
}

std::shared_ptr<Session> Session::adopt(const Driver& d, CUcontext context, CUstream stream, std::string label) {
  std::shared_ptr<Session> s(new Session(d, std::move(label)));
  s->context_ = context;
  s->stream_ = stream;
  if (!stream) {
    const ContextScope scope(*s);
    s->check(d.cuStreamCreate(&s->stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    s->owns_stream_ = true;
  }
  return s;
}

Session::~Session() {
  if (owns_stream_ && stream_) {
    const ContextScope scope(*this);
    d_.cuStreamSynchronize(stream_);
    d_.cuStreamDestroy_v2(stream_);
  }
  if (owns_context_) d_.cuDevicePrimaryCtxRelease_v2(device_);
}

ContextScope::ContextScope(const Session& s) : s_(s) { s.driver().cuCtxPushCurrent_v2(s.context()); }

ContextScope::~ContextScope() {
  CUcontext popped = nullptr;
  s_.driver().cuCtxPopCurrent_v2(&popped);
}

}  // namespace lwload::cuda
