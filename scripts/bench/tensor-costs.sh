#!/usr/bin/env bash
# benchmark: what a million tensors cost inspect --json and load (docs/BENCHMARKS.md, "What a tensor costs").
# Writes the amplification suite's million-tensor files (a million one-element safetensors tensors,
# a million one-byte ONNX initializers) and their one-tensor twins, then runs `lwload inspect
# --json` and `lwload load --device host` on each REPS times, the commands taking turns, and prints
# the medians: peak RSS (and per tensor, less the one-tensor file's), CPU (user + system) and wall
# time, beside the limits issue 40 set. BEFORE=OTHER_BUILD_DIR adds the same rows for that build's
# lwload, in the same turns: a change and what it replaced, measured side by side.
#   scripts/bench/tensor-costs.sh [BUILD_DIR] [REPS]   (default: build 5)
# The files go to a temporary folder ($LWLOAD_SCRATCH or /tmp) and are deleted.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
reps=${2:-5}
python=/usr/bin/python3
scratch=$(mktemp -d "${LWLOAD_SCRATCH:-/tmp}/tensor-costs.XXXXXX")
trap 'rm -rf "$scratch"' EXIT

make() { "$python" tests/amplification/make_hostile.py "$1" "$scratch/$2"; }
make safetensors_1m m.safetensors
make safetensors_many_1 one.safetensors
make onnx_1m m.onnx
make onnx_many_1 one.onnx

builds=("$build")
[ -n "${BEFORE:-}" ] && builds+=("$BEFORE")
samples="$scratch/samples"
: >"$samples"
for ((rep = 0; rep < reps; rep++)); do
  for b in "${builds[@]}"; do
    for format in safetensors onnx; do
      for command in "inspect --json" "load --device host"; do
        for file in one m; do
          # shellcheck disable=SC2086  # the command's words
          /usr/bin/time -f "%M %U %S %e" -o "$scratch/time" env -u MALLOC_PERTURB_ \
            "$b/tools/lwload/lwload" $command "$scratch/$file.$format" >/dev/null
          echo "$b|$format|$command|$file $(cat "$scratch/time")" >>"$samples"
        done
      done
    done
  done
done

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); $reps runs each, medians"
"$python" - "$samples" <<'EOF'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    key, values = line.rsplit("|", 1)
    file, rss, user, system, wall = values.split()
    rows.setdefault((key, file), []).append((int(rss), float(user) + float(system), float(wall)))
limits = {"inspect --json": ("256 MiB", "1 s", "64 MiB + header"), "load --device host": ("512 MiB", "-", "256 MiB")}
print("| build | format | command | peak RSS | per tensor | CPU | wall | limit (RSS, CPU) | goal |")
print("|---|---|---|---|---|---|---|---|---|")
for (key, file), samples in rows.items():
    if file != "m":
        continue
    build, fmt, command = key.split("|")
    one = statistics.median(s[0] for s in rows[(key, "one")])
    rss = statistics.median(s[0] for s in samples)
    cpu = statistics.median(s[1] for s in samples)
    wall = statistics.median(s[2] for s in samples)
    limit = limits[command]
    print(f"| {build} | {fmt} | `{command}` | {rss / 1024:.1f} MiB | {(rss - one) * 1024 / 1e6:.0f} B "
          f"| {cpu:.2f} s | {wall:.2f} s | {limit[0]}, {limit[1]} | {limit[2]} |")
EOF
