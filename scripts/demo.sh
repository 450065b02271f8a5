#!/usr/bin/env bash
# entry point: the demo — builds lwload and profiles a naive loader beside it on a 512 MiB model.
# The main job: installs what the build needs, builds, shows lwload on a bundled sample, then
# shows what lwload is for: synthesizes a 512 MiB model in the layout real writers produce
# (packed safetensors: tensors back to back after an 8-byte-padded header), and profiles the
# naive loader (read the file, copy every tensor) beside lwload on the default device, each in
# its own process, into one SVG. Ends with the one line to remember and where the SVG is.
#   BUILD_DIR    build folder (default: build)
#   PROFILE_SVG  where the SVG goes (default: $BUILD_DIR/lwload-compare.svg; .json and .png beside)
#   DEMO_SIZE    synthetic model size (default: 512MiB)
#   DEMO_FORMAT  safetensors (default) or gguf (packed: alignment 32, as llama.cpp writes)
#   NINJA_JOBS   parallel build jobs (default: ninja's own choice)
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/deps/install.sh build
build=${BUILD_DIR:-build}
[ -f "$build/build.ninja" ] || meson setup "$build" --werror
ninja -C "$build" ${NINJA_JOBS:+-j "$NINJA_JOBS"}
lwload="$build/tools/lwload/lwload"

sample=tests/data/gguf/tiny-llama-f32-f16-q8.gguf
if [ -f "$sample" ]; then
  echo "== lwload inspect $sample"
  "$lwload" inspect "$sample"
  echo
fi

echo "== lwload devices"
"$lwload" devices
echo

# The model lives beside the build (a real disk: on a tmpfs /tmp its pages would be shared memory,
# not file pages) and is removed at exit.
workdir=$(mktemp -d "$build/lwload-demo.XXXXXX")
trap 'rm -rf "$workdir"' EXIT
format=${DEMO_FORMAT:-safetensors}
model="$workdir/model.$format"
size=${DEMO_SIZE:-512MiB}
echo "== lwload synth $model --format $format --layout packed --size $size"
"$lwload" synth "$model" --format "$format" --layout packed --size "$size" --tensors 64
echo

svg=${PROFILE_SVG:-$build/lwload-compare.svg}
echo "== lwload profile $model --device auto --compare naive --svg $svg"
status=0
summary=$("$lwload" profile "$model" --device auto --compare naive --svg "$svg" --json "${svg%.svg}.json" 2>&1) || status=$?
echo "$summary"
if command -v rsvg-convert >/dev/null; then
  rsvg-convert "$svg" -o "${svg%.svg}.png"
fi
echo
# The line to remember: what the loader people use today costs, and what lwload costs.
echo "$summary" | sed -n 's/^in short: //p'
echo "comparison: $svg$(command -v rsvg-convert >/dev/null && echo " (and ${svg%.svg}.png)") — open it in a browser"
exit "$status"
