#!/usr/bin/env bash
# The main job: installs what the build needs, builds, shows lwload on a bundled sample, then
# proves the memory contract on the default device: synthesizes a 256 MiB page-aligned
# safetensors model in a temporary folder (removed at exit), loads it under `lwload profile`
# (--device auto) and writes the memory timeline as an SVG.
#   BUILD_DIR    build folder (default: build)
#   PROFILE_SVG  where the SVG goes (default: $BUILD_DIR/lwload-profile.svg)
#   DEMO_SIZE    synthetic model size (default: 256MiB)
#   NINJA_JOBS   parallel build jobs (default: ninja's own choice)
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
build=${BUILD_DIR:-build}
[ -f "$build/build.ninja" ] || meson setup "$build" --werror
ninja -C "$build" ${NINJA_JOBS:+-j "$NINJA_JOBS"}
lwload="$build/tools/lwload/lwload"

sample=../shared/testdata/gguf/tiny-llama-f32-f16-q8.gguf
if [ -f "$sample" ]; then
  echo "== lwload inspect $sample"
  "$lwload" inspect "$sample"
  echo
fi

echo "== lwload devices"
"$lwload" devices
echo

workdir=$(mktemp -d "${TMPDIR:-/tmp}/lwload-demo.XXXXXX")
trap 'rm -rf "$workdir"' EXIT
model="$workdir/model.safetensors"
size=${DEMO_SIZE:-256MiB}
echo "== lwload synth $model --size $size"
"$lwload" synth "$model" --format safetensors --size "$size" --tensors 16 --alignment 4096
echo

svg=${PROFILE_SVG:-$build/lwload-profile.svg}
echo "== lwload profile $model --device auto --svg $svg"
status=0
"$lwload" profile "$model" --device auto --svg "$svg" || status=$?
echo
echo "memory timeline: $svg (open it in a browser)"
exit "$status"
