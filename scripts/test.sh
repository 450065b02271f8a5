#!/usr/bin/env bash
# entry point: the test command — builds with warnings as errors and runs every suite.
#   BUILD_DIR   the build folder (default build)
#   SETUP_ARGS  extra `meson setup` options for a new build folder, e.g. -Doptimization=0
#   LWLOAD_REQUIRE  prerequisites the suites must find (tests/support/test_support.hpp), e.g.
#               exe,opencl,vulkan,validation: a missing one fails instead of skipping
# Arguments go to `meson test` (suite names, --no-suite NAME, ...).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/deps/install.sh test
# ggml for the adapter's suites, from npm at pinned versions (77: the registry is unreachable and
# nothing is cached; the ggml suite then skips).
./scripts/deps/prepare-ggml.sh || [ $? -eq 77 ]
# ONNX Runtime for the ONNX Runtime adapter's suite, from npm at a pinned version (77 likewise: the
# onnxruntime suite then skips).
./scripts/deps/prepare-onnxruntime.sh || [ $? -eq 77 ]
build=${BUILD_DIR:-build}
if [ ! -f "$build/build.ninja" ]; then
  # shellcheck disable=SC2086 # SETUP_ARGS is a list of options
  meson setup "$build" --werror ${SETUP_ARGS:-}
else
  # The build may have been configured by demo.sh before the test toolchain was installed: look
  # again for what the suites use (rusticl's ICD, rsvg-convert, the system python).
  meson setup --reconfigure "$build" >/dev/null
fi
ninja -C "$build"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
# Suites that measure memory or time, or share a device, are serial (is_parallel: false in
# tests/meson.build); the format readers run two at a time.
meson test -C "$build" --print-errorlogs --num-processes 2 "$@" | tee "$log" || status=$?
ok=$(awk '/^Ok:/ {print $2}' "$log")
failed=$(awk '/^Fail:/ {n += $2} /^Timeout:/ {n += $2} END {print n + 0}' "$log")
echo "${ok:-0} passed, ${failed} failed"
exit "$status"
