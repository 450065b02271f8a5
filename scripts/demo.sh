#!/usr/bin/env bash
# The main job: installs what the build needs, builds, and shows lwload on a bundled sample.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
build=${BUILD_DIR:-build}
[ -f "$build/build.ninja" ] || meson setup "$build" --werror
ninja -C "$build"
lwload="$build/tools/lwload/lwload"
sample=../shared/testdata/gguf/tiny-llama-f32-f16-q8.gguf
echo "== lwload inspect $sample"
"$lwload" inspect "$sample"
