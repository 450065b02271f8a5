#!/usr/bin/env bash
# benchmark: llama.cpp's Vulkan backend against lwload on the same GGUF and device (docs/BENCHMARKS.md).
# Issue 9: llama.cpp's Vulkan backend (through node-llama-cpp's prebuilt binaries) against lwload, loading the
# same llama GGUF onto the same Vulkan device (lavapipe here). Runs the loaders alternately, REPS rounds, each
# run under scripts/bench/llama-measure.py (wait4 ru_maxrss + /proc/PID/status sampled every 20 ms), then
# prints medians (scripts/bench/llama-summary.py).
#
#   scripts/bench/llama-vulkan.sh [MODEL.gguf] [REPS]
#
# Environment (defaults in brackets):
#   WORK   scratch folder [/tmp/llama]; results go to $WORK/results/
#   LWLOAD lwload binary [$WORK/bin/lwload]    (copy build/tools/lwload/lwload and build/liblwload.so* there)
#   NODE_DIR folder whose node_modules holds node-llama-cpp + @node-llama-cpp/linux-x64-vulkan [$WORK/node]
#   HOLD   seconds each process keeps the weights before exiting [3]
#   EXTRA  1 also runs llama.cpp with useMmap=false (--no-mmap) [1]
# Prepare:
#   /usr/bin/python3 scripts/bench/llama-write-gguf.py /tmp/llama/llama-bench-f16.gguf
#   (cd /tmp/llama/node && npm install --ignore-scripts node-llama-cpp @node-llama-cpp/linux-x64-vulkan)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
WORK=${WORK:-/tmp/llama}
MODEL=${1:-$WORK/llama-bench-f16.gguf}
REPS=${2:-5}
LWLOAD=${LWLOAD:-$WORK/bin/lwload}
NODE_DIR=${NODE_DIR:-$WORK/node}
HOLD=${HOLD:-3}
EXTRA=${EXTRA:-1}
export LD_LIBRARY_PATH=$(dirname "$LWLOAD")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# llama.cpp's Vulkan backend skips CPU-type devices (lavapipe) unless they are named here
export GGML_VK_VISIBLE_DEVICES=${GGML_VK_VISIBLE_DEVICES:-0}
export VK_ICD_FILENAMES=${VK_ICD_FILENAMES:-/usr/share/vulkan/icd.d/lvp_icd.x86_64.json}
export BENCH_LLAMA_MODULES=$NODE_DIR/node_modules
out=$WORK/results
mkdir -p "$out/logs"
res=$out/runs.jsonl
: > "$res"
measure=( /usr/bin/python3 "$here/llama-measure.py" )

run_llama() {  # $1 label, rest: extra args
  local label=$1; shift
  "${measure[@]}" --label "$label" --marker '^LOADED' --log "$out/logs/$label-$i.log" -- \
    node "$here/llama-node.mjs" "$MODEL" --hold-ms $((HOLD * 1000)) "$@" | tee -a "$res"
  grep -E '^(INIT|LOADED|HELD)' "$out/logs/$label-$i.log" | sed 's/^/    /'
}
run_lwload() {  # $1 label, rest: lwload load options
  local label=$1; shift
  "${measure[@]}" --label "$label" --marker '^holding the weights' --capture '^loaded ' --log "$out/logs/$label-$i.log" -- \
    "$LWLOAD" load "$MODEL" --device vulkan:0 --hold "$HOLD" "$@" | tee -a "$res"
  grep -E '^loaded ' "$out/logs/$label-$i.log" | sed 's/^/    /'
}

echo "model: $MODEL ($(stat -c %s "$MODEL") bytes); lwload: $LWLOAD ($("$LWLOAD" --version)); reps: $REPS; hold: ${HOLD}s"
cat "$MODEL" > /dev/null  # warm the page cache: every run below is a warm-cache load
for i in $(seq 1 "$REPS"); do
  echo "== round $i (loadavg $(cut -d' ' -f1-3 /proc/loadavg); busiest other processes: $(ps -eo pcpu,comm --sort=-pcpu --no-headers | head -3 | awk '{printf "%s %s%%; ", $2, $1}'))"
  run_llama llama.cpp-mmap
  run_lwload lwload-zero-copy --placement zero-copy
  run_lwload lwload-staged-64MiB --placement staged --budget 64MiB
  if [ "$EXTRA" = 1 ]; then run_llama llama.cpp-no-mmap --no-mmap; fi
done
/usr/bin/python3 "$here/llama-summary.py" "$res" | tee "$out/summary.md"
