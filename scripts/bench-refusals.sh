#!/usr/bin/env bash
# Warm zero-copy time to ready on the host device with each kernel feature refused the way older
# kernels and app sandboxes refuse it (tests/support/refuse.c, a seccomp filter), against nothing
# refused and against one mmap(MAP_POPULATE) of the file, all in one run: the configurations take
# turns within each repetition, so drift in the machine's load falls on all alike.
#   scripts/bench-refusals.sh [BUILD_DIR] [SIZE] [REPS]   (default: build 2GiB 5)
# Prints a Markdown table (medians). The model is written to a temporary folder and deleted.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
size=${2:-2GiB}
reps=${3:-5}
lwload=$build/tools/lwload/lwload
refuse=$build/tests/refuse
python=/usr/bin/python3
[ -x "$lwload" ] && [ -x "$refuse" ] || { echo "bench-refusals: build $lwload and $refuse first" >&2; exit 2; }

dir=$(mktemp -d "${LWLOAD_SCRATCH:-/tmp}/bench-refusals.XXXXXX")
trap 'rm -rf "$dir"' EXIT
model=$dir/model.safetensors
"$lwload" synth "$model" --size "$size" --tensors 64 --layout packed >/dev/null
# Warm, as a file read by readahead is cached (large folios where the file system has them), not
# as synth's writes left it.
"$python" -c 'import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); os.fdatasync(fd); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)' "$model"
cat "$model" >/dev/null

configs=(none populate cachestat io_uring_eperm io_uring_enosys vm_readv openat2 populate,vm_readv all)
declare -A times
for ((rep = 0; rep < reps; ++rep)); do
  for c in "${configs[@]}"; do
    if [ "$c" = none ]; then prefix=(); else prefix=("$refuse" "$c" --); fi
    t=$("${prefix[@]}" "$lwload" load "$model" --device host --placement zero-copy --json |
        "$python" -c 'import json, sys; print(json.load(sys.stdin)["seconds"])')
    times[$c]+="$t "
  done
  # The kernel's own limits, same repetition: one mmap of the whole file, populated by
  # MAP_POPULATE, and by MADV_POPULATE_READ.
  t=$("$python" - "$model" <<'EOF'
import mmap, os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
size = os.fstat(fd).st_size
start = time.perf_counter()
m = mmap.mmap(fd, size, flags=mmap.MAP_SHARED | mmap.MAP_POPULATE, prot=mmap.PROT_READ)
mp = time.perf_counter() - start
m.close()
start = time.perf_counter()
m = mmap.mmap(fd, size, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ)
m.madvise(22)  # MADV_POPULATE_READ
pr = time.perf_counter() - start
m.close()
print(mp, pr)
EOF
)
  times[MAP_POPULATE]+="${t% *} "
  times[POPULATE_READ]+="${t#* } "
done

"$python" - "$size" "$reps" <<EOF
import statistics, sys
rows = {$(for k in "${!times[@]}"; do printf '"%s": [%s], ' "$k" "$(echo ${times[$k]} | tr ' ' ',')"; done)}
med = {k: statistics.median(v) for k, v in rows.items()}
size, reps = sys.argv[1], sys.argv[2]
print(f"warm zero-copy load of a {size} packed safetensors on host, median of {reps}, one run")
print()
print("| what the kernel refuses | time to ready | (min–max) | vs nothing refused | vs mmap(MAP_POPULATE) |")
print("|---|---|---|---|---|")
def row(name, k):
    print(f"| {name} | {med[k]*1e3:.1f} ms | {min(rows[k])*1e3:.1f}–{max(rows[k])*1e3:.1f} | {med[k]/med['none']:.2f}× | {med[k]/med['MAP_POPULATE']:.2f}× |")
for k in ["none", "populate", "cachestat", "io_uring_eperm", "io_uring_enosys", "vm_readv", "openat2", "populate,vm_readv", "all"]:
    row(f"\`{k}\`" if k != "none" else "nothing", k)
row("(one mmap + MADV_POPULATE_READ of the file)", "POPULATE_READ")
row("(one mmap(MAP_POPULATE) of the file)", "MAP_POPULATE")
EOF
