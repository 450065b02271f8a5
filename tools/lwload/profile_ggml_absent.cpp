// Without ggml (-Dggml found nothing): `lwload profile --loader ggml` says so (see profile_ggml.hpp).
#include "profile_ggml.hpp"

#include "lwload/error.hpp"

namespace lwload::cli {

bool ggml_loader_available() noexcept { return false; }

profile::Report profile_ggml(const std::string&, const Manifest&, const std::string&, std::chrono::microseconds) {
  fail(ErrorCode::unsupported,
       "profile --loader ggml: this lwload was built without ggml (scripts/deps/prepare-ggml.sh, -Dggml=enabled)");
}

}  // namespace lwload::cli
