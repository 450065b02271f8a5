#!/usr/bin/env bash
# Configures (warnings are errors), builds and runs every test suite. The README's test command.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh test
# ggml for the adapter's suites, from npm at pinned versions (77: the registry is unreachable and
# nothing is cached; the ggml suite then skips).
./scripts/prepare-ggml.sh || [ $? -eq 77 ]
build=${BUILD_DIR:-build}
if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" --werror
else
  # The build may have been configured by demo.sh before the test toolchain was installed: look
  # again for what the suites use (rusticl's ICD, rsvg-convert, the system python).
  meson setup --reconfigure "$build" >/dev/null
fi
ninja -C "$build"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
meson test -C "$build" --print-errorlogs "$@" | tee "$log" || status=$?
ok=$(awk '/^Ok:/ {print $2}' "$log")
failed=$(awk '/^Fail:/ {n += $2} /^Timeout:/ {n += $2} END {print n + 0}' "$log")
echo "${ok:-0} passed, ${failed} failed"
exit "$status"
