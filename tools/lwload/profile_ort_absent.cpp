// Without ONNX Runtime (-Donnxruntime found nothing): `lwload profile --loader ort` says so (see profile_ort.hpp).
#include "profile_ort.hpp"

#include "lwload/error.hpp"

namespace lwload::cli {

bool ort_loader_available() noexcept { return false; }

profile::Report profile_ort(const std::string&, const Manifest&, std::chrono::microseconds) {
  fail(ErrorCode::unsupported,
       "profile --loader ort: this lwload was built without ONNX Runtime (scripts/deps/prepare-onnxruntime.sh, "
       "-Donnxruntime=enabled)");
}

}  // namespace lwload::cli
