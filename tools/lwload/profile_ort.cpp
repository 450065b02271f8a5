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
    fail(ErrorCode::unsupported, "profile --loader ort: ONNX Runtime reads ONNX models; ", path, " is ", manifest.format);
  using profile::Clock;
  const OrtApi& api = *OrtGetApiBase()->GetApi(ORT_API_VERSION);
  // Started as an application starts it, before loading (the baseline includes it).
  OrtEnv* raw_env = nullptr;
  check(api, api.CreateEnv(ORT_LOGGING_LEVEL_ERROR, "lwload-profile", &raw_env), "CreateEnv");
  const std::unique_ptr<OrtEnv, void (*)(OrtEnv*)> env(raw_env, api.ReleaseEnv);
  OrtSessionOptions* raw_options = nullptr;
  check(api, api.CreateSessionOptions(&raw_options), "CreateSessionOptions");
  const std::unique_ptr<OrtSessionOptions, void (*)(OrtSessionOptions*)> options(raw_options, api.ReleaseSessionOptions);

  profile::Report report = baseline_report(manifest, std::string("ONNX Runtime ") + OrtGetApiBase()->GetVersionString() + " CPU",
                                           "ort", "onnxruntime", period);
  profile::MemorySampler sampler(period);
  profile::Timeline timeline(sampler.origin());
  BaselineRun run;
  report.pss_baseline = profile::read_pss_now();
  run.hwm_exact = profile::reset_peak_rss();
  sampler.start();
  run.baseline = profile::read_memory_now();
  run.begin = Clock::now();
  {
    OrtSession* raw_session = nullptr;
    timeline.phase_begin("session", Clock::now());
    check(api, api.CreateSession(env.get(), model_file(path, manifest).c_str(), options.get(), &raw_session), "CreateSession");
    const std::unique_ptr<OrtSession, void (*)(OrtSession*)> session(raw_session, api.ReleaseSession);
    run.ready = Clock::now();
    timeline.phase_end("session", run.ready);
    run.at_ready = profile::read_memory_now();
    run.at_ready.ms = sampler.ms_since_origin(run.ready);
    timeline.phase_begin("release", Clock::now());
  }
  sampler.stop();
  run.end = Clock::now();
  timeline.phase_end("release", run.end);
  finish_baseline_report(report, sampler, timeline, run);
  return report;
}

}  // namespace lwload::cli
