// Runs the loaders of `lwload profile --compare` in child processes (see profile_compare.hpp).
#include "profile_compare.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli.hpp"
#include "load_options.hpp"
#include "profile_ggml.hpp"
#include "profile_ort.hpp"
#include "lwload/error.hpp"
#include "lwload/plan.hpp"

extern char** environ;

namespace lwload::cli {
namespace {

// The running binary: children must be this very lwload, not whichever is first on PATH.
std::string self_exe() {
  std::error_code ec;
  const auto path = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) fail(ErrorCode::io, "profile --compare: cannot find this program (/proc/self/exe: ", ec.message(), ")");
  return path.string();
}

// A private file for one child's JSON report, removed when done.
class ReportFile {
 public:
  ReportFile() {
    std::string pattern = (std::filesystem::temp_directory_path() / "lwload-compare-XXXXXX").string();
    const int fd = ::mkstemp(pattern.data());
    if (fd < 0) fail(ErrorCode::io, "profile --compare: cannot create a file in ", pattern, ": ", std::strerror(errno));
    ::close(fd);
    path_ = pattern;
  }
  ~ReportFile() {
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }
  ReportFile(const ReportFile&) = delete;
  ReportFile& operator=(const ReportFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Runs argv with stdout to /dev/null (the child's summary is the parent's to print) and stderr
// to `errors` (shown when the child fails). Returns the exit status, or -1 for a signal.
int run_child(const std::vector<std::string>& argv, const std::string& errors) {
  std::vector<char*> raw;
  for (const auto& a : argv) raw.push_back(const_cast<char*>(a.c_str()));
  raw.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, errors.c_str(), O_WRONLY | O_TRUNC, 0);
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, raw[0], &actions, nullptr, raw.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) fail(ErrorCode::io, "profile --compare: cannot start ", argv[0], ": ", std::strerror(rc));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) fail(ErrorCode::io, "profile --compare: waitpid: ", std::strerror(errno));
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

std::vector<std::string> parse_compare_list(const std::string& text) {
  std::vector<std::string> loaders = split_names(text);
  if (loaders.empty())
    fail(ErrorCode::usage, "--compare: name at least one loader (naive, ggml, ort, zero-copy, direct, staged)");
  for (const auto& l : loaders)
    if (!is_baseline_loader(l) && l != "auto" && !parse_placement(l))
      fail(ErrorCode::usage, "--compare: '", l, "' is not naive, ggml, ort, auto, zero-copy, direct or staged");
  for (const auto& l : loaders) {
    if (l == "ggml" && !ggml_loader_available())
      fail(ErrorCode::unsupported,
           "--compare ggml: this lwload was built without ggml (scripts/deps/prepare-ggml.sh, -Dggml=enabled)");
    if (l == "ort" && !ort_loader_available())
      fail(ErrorCode::unsupported,
           "--compare ort: this lwload was built without ONNX Runtime (scripts/deps/prepare-onnxruntime.sh, "
           "-Donnxruntime=enabled)");
  }
  return loaders;
}

Comparison run_comparison(const std::string& model, const std::vector<std::string>& loaders,
                          const std::vector<std::string>& forwarded) {
  const std::string exe = self_exe();
  Comparison out;
  for (const auto& loader : loaders) {
    ReportFile report, errors;
    std::vector<std::string> argv = {exe, "profile", model};
    argv.insert(argv.end(), forwarded.begin(), forwarded.end());
    if (is_baseline_loader(loader)) {
      argv.insert(argv.end(), {"--loader", loader});
    } else {
      argv.insert(argv.end(), {"--placement", loader});
    }
    argv.insert(argv.end(), {"--json", report.path()});
    // exit_contract is a violated contract, which is a result (the naive loader's is expected to be).
    const int status = run_child(argv, errors.path());
    if (status != exit_ok && status != exit_contract) {
      std::string said = read_all(errors.path());
      while (!said.empty() && said.back() == '\n') said.pop_back();
      // The child's exit status says what kind of failure it was (cli.hpp): keep it.
      const ErrorCode code = status == exit_usage         ? ErrorCode::usage
                             : status == exit_bad_input   ? ErrorCode::bad_input
                             : status == exit_io          ? ErrorCode::io
                             : status == exit_unsupported ? ErrorCode::unsupported
                                                          : ErrorCode::device;
      fail(code, "profile --compare: the ", is_baseline_loader(loader) ? loader : "lwload --placement " + loader,
           " run failed (exit status ", status, "): ", said);
    }
    std::string json = read_all(report.path());
    profile::Report r = profile::report_from_json(json);
    r.model = model;
    const std::string label = is_baseline_loader(loader) ? loader : "lwload " + r.placement;
    out.series.push_back({label, std::move(r)});
    out.reports_json.push_back(std::move(json));
  }
  return out;
}

}  // namespace lwload::cli
