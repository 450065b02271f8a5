#!/usr/bin/env bash
# benchmark: each format's worst memory per header byte (docs/SECURITY.md, "What a header may cost").
# Writes the amplification suite's worst shapes (tests/amplification/make_hostile.py: the smallest
# tensor entry each format allows, a million times or as many as fit; metadata arrays; a shared
# TFLite table; a large TFJS manifest) and prints, for each, the peak RSS of `lwload inspect --json
# --metadata` less that of a one-tensor file, over the file's bytes (median of REPS runs).
#   scripts/bench/header-bytes.sh [BUILD_DIR] [REPS]   (default: build 3)
# The files go to a temporary folder ($LWLOAD_SCRATCH or /tmp) and are deleted.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
reps=${2:-3}
lwload="$build/tools/lwload/lwload"
scratch=$(mktemp -d "${LWLOAD_SCRATCH:-/tmp}/header-bytes.XXXXXX")
trap 'rm -rf "$scratch"' EXIT

peak_kib() {  # the median peak RSS of `lwload inspect --json --metadata FILE`, in KiB
  for ((i = 0; i < reps; i++)); do
    /usr/bin/time -f "%M" -o "$scratch/rss" env -u MALLOC_PERTURB_ "$lwload" inspect --json --metadata "$1" >/dev/null
    cat "$scratch/rss"
  done | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

/usr/bin/python3 tests/amplification/make_hostile.py safetensors_many_1 "$scratch/one.safetensors"
base=$(peak_kib "$scratch/one.safetensors")
echo "baseline (one tensor): $base KiB; $reps runs each, medians"
echo "| case | file bytes | peak RSS | B of memory per header byte |"
echo "|---|---|---|---|"
for entry in onnx_tiny_initializers:tiny.onnx onnx_1m:m.onnx gguf_tiny_tensors:tiny.gguf \
  gguf_empty_strings:strings.gguf gguf_u8_array:u8.gguf tflite_tiny_tensors:tiny.tflite \
  tflite_shared_quantization:shared.tflite tfjs_big_manifest:tfjs safetensors_1m:m.safetensors; do
  case=${entry%%:*}
  out="$scratch/${entry##*:}"
  /usr/bin/python3 tests/amplification/make_hostile.py "$case" "$out" >/dev/null
  file=$out
  [ -d "$out" ] && file="$out/model.json"
  bytes=$(stat -c %s "$file")
  rss=$(peak_kib "$file")
  echo "| $case | $bytes | $((rss / 1024)) MiB | $(awk -v r="$rss" -v b="$base" -v n="$bytes" 'BEGIN { printf "%.1f", (r - b) * 1024 / n }') |"
  rm -rf "$out"
done
