#!/usr/bin/env bash
# benchmark: ggml's weights loaded by lwload's adapter, by ggml and by llama.cpp (docs/BENCHMARKS.md).
# ggml's weights three ways, on ggml's CPU and Vulkan (lavapipe here) devices, for docs/BENCHMARKS.md:
#   lwload     the adapter: lwload::ggml::load (examples/ggml_matvec --loader lwload --load-only)
#   ggml       ggml's own path: gguf_init_from_file + alloc_ctx_tensors + tensor_set (--loader ggml)
#   llama.cpp  llama_model_load_from_file, every layer offloaded on Vulkan (tools/bench/llama_load)
# Each run is its own process; the loaders alternate, REPS rounds, warm page cache; each prints peak
# RSS growth, anonymous growth and time to ready, and the medians are printed per loader and backend.
#
#   scripts/bench/ggml.sh [MODEL.gguf] [REPS]
# Default model: a TinyLlama-shaped F16 GGUF with llama.cpp's llama-spm vocabulary (1.23 GiB), written
# to $WORK by scripts/bench/llama-write-gguf.py and removed afterwards. BUILD names the build folder.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${BUILD:-$here/../../build}
WORK=${WORK:-/tmp/lwload-bench-ggml}
REPS=${2:-5}
mkdir -p "$WORK"
model=${1:-}
if [ -z "$model" ]; then
  model=$WORK/llama-bench-f16.gguf
  /usr/bin/python3 "$here/llama-write-gguf.py" "$model" --vocab "$here/../../tests/data/gguf/vocab-llama-spm.gguf" >/dev/null
  trap 'rm -f "$model"' EXIT
fi
export GGML_VK_VISIBLE_DEVICES=${GGML_VK_VISIBLE_DEVICES:-0}
runs=$WORK/runs.jsonl
: > "$runs"
echo "model: $model ($(stat -c %s "$model") bytes); reps: $REPS; $(nproc) cores; loadavg $(cut -d' ' -f1-3 /proc/loadavg)"
cat "$model" > /dev/null
for i in $(seq 1 "$REPS"); do
  for backend in cpu vulkan; do
    "$build/examples/ggml_matvec" "$model" --backend "$backend" --loader lwload --load-only --json 2>/dev/null | tail -1 >> "$runs"
    "$build/examples/ggml_matvec" "$model" --backend "$backend" --loader ggml --load-only --json 2>/dev/null | tail -1 >> "$runs"
    "$build/tools/bench/llama_load" "$model" --backend "$backend" 2>/dev/null | tail -1 >> "$runs"
  done
done
/usr/bin/python3 - "$runs" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print("| backend | loader | peak RSS growth (MiB) | anonymous growth (MiB) | time to ready (s) | runs |")
print("|---|---|---|---|---|---|")
med = {}
for backend in ("cpu", "vulkan"):
    for loader in ("lwload", "ggml", "llama.cpp"):
        rs = [r for r in rows if r["backend"] == backend and r["loader"] == loader]
        if not rs: continue
        m = {k: statistics.median(r[k] for r in rs) for k in ("peak_rss_growth", "anon_growth", "load_seconds")}
        med[backend, loader] = m
        print(f"| {backend} | {loader} | {m['peak_rss_growth']/2**20:.0f} | {m['anon_growth']/2**20:.1f} | {m['load_seconds']:.3f} | {len(rs)} |")
print()
for backend in ("cpu", "vulkan"):
    a = med.get((backend, "lwload"))
    for peer in ("ggml", "llama.cpp"):
        b = med.get((backend, peer))
        if a and b:
            print(f"{backend}: lwload / {peer}: peak {a['peak_rss_growth']/b['peak_rss_growth']:.0%}, "
                  f"time to ready {a['load_seconds']/b['load_seconds']:.2f}x")
PY
