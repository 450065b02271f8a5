// ONNX Runtime's own loading, profiled (see profile_ort.hpp).
#include "profile_ort.hpp"

#include <filesystem>
#include <memory>
#include <string>

#include <onnxruntime_c_api.h>

#include "lwload/error.hpp"
#include "profile_baseline.hpp"

namespace lwload::cli {
namespace {

void check(const OrtApi& api, OrtStatus* status, std::string_view what) {
  if (!status) return;
  const std::string message = api.GetErrorMessage(status);
  api.ReleaseStatus(status);
  fail(ErrorCode::device, "profile --loader ort: ", what, ": ", message);
}

// The model file ONNX Runtime opens: the path itself, or the one .onnx file of a folder.
std::string model_file(const std::string& path, const Manifest& manifest) {
  return std::filesystem::is_directory(path) ? manifest.files[0].string() : path;
}

}  // namespace

bool ort_loader_available() noexcept { return true; }

profile::Report profile_ort(const std::string& path, const Manifest& manifest, std::chrono::microseconds period) {
  if (manifest.format != "onnx")
    fail(ErrorCode::unsupported, "profile --loader ort: ONNX Runtime reads ONNX models; ", path, " is ",
         manifest.format);
  using profile::Clock;
  const OrtApi& api = *OrtGetApiBase()->GetApi(ORT_API_VERSION);
  // Started as an application starts it, before loading (the baseline includes it).
  OrtEnv* raw_env = nullptr;
  check(api, api.CreateEnv(ORT_LOGGING_LEVEL_ERROR, "lwload-profile", &raw_env), "CreateEnv");
  const std::unique_ptr<OrtEnv, void (*)(OrtEnv*)> env(raw_env, api.ReleaseEnv);
  OrtSessionOptions* raw_options = nullptr;
  check(api, api.CreateSessionOptions(&raw_options), "CreateSessionOptions");
  const std::unique_ptr<OrtSessionOptions, void (*)(OrtSessionOptions*)> options(raw_options,
                                                                                 api.ReleaseSessionOptions);

  return run_engine_load(
      baseline_report(manifest, std::string("ONNX Runtime ") + OrtGetApiBase()->GetVersionString() + " CPU", "ort",
                      "onnxruntime", period),
      period, [&](profile::Timeline& timeline) -> std::shared_ptr<void> {
        OrtSession* session = nullptr;
        timeline.phase_begin("session", Clock::now());
        check(api, api.CreateSession(env.get(), model_file(path, manifest).c_str(), options.get(), &session),
              "CreateSession");
        timeline.phase_end("session", Clock::now());
        return std::shared_ptr<OrtSession>(session, api.ReleaseSession);
      });
}

}  // namespace lwload::cli
