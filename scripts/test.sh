#!/usr/bin/env bash
# Configures (warnings are errors), builds and runs every test suite. The README's test command.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
build=${BUILD_DIR:-build}
if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" --werror
fi
ninja -C "$build"
meson test -C "$build" --print-errorlogs "$@"
