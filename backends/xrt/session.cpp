// The XRT session (see session.hpp).
#include "backends/xrt/session.hpp"

#include "lwload/error.hpp"

namespace lwload::xrt_backend {

std::shared_ptr<Session> Session::open(::xrt::device device, const DeviceInfo& info) {
  if (!device) fail(ErrorCode::usage, info.id(), ": no XRT device given");
  std::shared_ptr<Session> s(new Session);
  s->device_ = std::move(device);
  s->unified_ = info.memory == MemoryModel::unified;
  s->label_ = str(info.id(), " (", info.name, ")");
  return s;
}

}  // namespace lwload::xrt_backend
