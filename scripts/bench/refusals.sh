#!/usr/bin/env bash
# benchmark: what each refused kernel feature costs a warm zero-copy load (docs/BENCHMARKS.md).
# Warm zero-copy time to ready on the host device with each kernel feature refused the way older
# kernels and app sandboxes refuse it (tests/support/refuse.c, a seccomp filter), against nothing
# refused and against one mmap of the file populated, for a packed safetensors and a GGUF of the
# same size, all in one run: the configurations take turns within each repetition, so drift in the
# machine's load falls on all alike. Then, unless COLD_REPS=0, cold loads (the file evicted before
# each) against mmap + MADV_POPULATE_READ of the cold file.
#   scripts/bench/refusals.sh [BUILD_DIR] [SIZE] [REPS]   (default: build 2GiB 11; COLD_REPS=5)
# BEFORE=OTHER_BUILD_DIR adds warm rows for that build's lwload (nothing, each of the four refusals,
# all), taking turns with the rest: a change and what it replaced, measured in the same run.
# Prints Markdown tables (medians; time to ready and the process's CPU time) with the load average
# before and after. The models are written
# to a temporary folder ($LWLOAD_SCRATCH or /tmp) and deleted.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
size=${2:-2GiB}
reps=${3:-11}
cold_reps=${COLD_REPS:-5}
tensors=${TENSORS:-512}
lwload=$build/tools/lwload/lwload
refuse=$build/tests/refuse
python=${PYTHON:-/usr/bin/python3}  # has mmap.madvise (3.8+)
[ -x "$lwload" ] && [ -x "$refuse" ] || { echo "bench-refusals: build $lwload and $refuse first" >&2; exit 2; }

dir=$(mktemp -d "${LWLOAD_SCRATCH:-/tmp}/bench-refusals.XXXXXX")
trap 'rm -rf "$dir"' EXIT
formats=(safetensors gguf)
"$lwload" synth "$dir/model.safetensors" --size "$size" --tensors "$tensors" --layout packed >/dev/null
"$lwload" synth "$dir/model.gguf" --format gguf --size "$size" --tensors "$tensors" >/dev/null

# In-process loads (tools/bench/warm_loads.cpp, several loads in one process), built against the
# build's liblwload (and BEFORE's, whose headers are BEFORE/../include).
inproc_build() {  # inproc_build BUILD_DIR OUTPUT
  g++ -O2 -std=c++20 -I"$1/../include" -I"$1/include" tools/bench/warm_loads.cpp -L"$1" -llwload \
    -Wl,-rpath,"$(cd "$1" && pwd)" -o "$2"
}
inproc_build "$build" "$dir/warm-loads"
[ -z "${BEFORE:-}" ] || inproc_build "$BEFORE" "$dir/warm-loads-before"
inproc_loads=${INPROC_LOADS:-3}

evict() {
  "$python" -c 'import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); os.fdatasync(fd); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)' "$1"
}
# Warm, as a file read by readahead is cached (large folios where the file system has them), not
# as synth's writes left it.
for f in "${formats[@]}"; do evict "$dir/model.$f"; cat "$dir/model.$f" >/dev/null; done

# One mmap of the whole file, populated by MADV_POPULATE_READ, timed in-process: the kernel's floor.
populate_py='
import mmap, os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
size = os.fstat(fd).st_size
start = time.perf_counter()
m = mmap.mmap(fd, size, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ)
m.madvise(22)  # MADV_POPULATE_READ
print(time.perf_counter() - start, "-")
m.close()
'
# Runs a command printing `lwload load --json`; prints its "seconds" (load() called to every tensor
# ready) and the CPU time (user + system) of the whole process: on a machine shared with others'
# builds the wall time swings by tens of ms from run to run, the CPU a process spent far less.
measure_py='
import json, resource, subprocess, sys
def cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime
before = cpu()
out = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, check=True).stdout
print(json.loads(out)["seconds"], cpu() - before)
'
load() {  # load FILE [REFUSAL | before:REFUSAL | plain]: "SECONDS CPU_SECONDS"
  local prefix=() exe=$lwload refusal=${2:-none}
  if [ "${refusal#before:}" != "$refusal" ]; then exe=$BEFORE/tools/lwload/lwload refusal=${refusal#before:}; fi
  [ "$refusal" != plain ] && prefix=("$refuse" "$refusal" --)
  "$python" -c "$measure_py" "${prefix[@]}" "$exe" load "$1" --device host --placement zero-copy --json
}

# "none" runs under the launcher with nothing refused, so the baseline pays what emulating a
# refusal costs (an exec, the filter run on every call) and the rows differ by the fallbacks alone;
# "plain" is the binary without the launcher.
configs=(plain none populate cachestat io_uring_eperm io_uring_enosys vm_readv openat2 populate,vm_readv all)
if [ -n "${BEFORE:-}" ]; then
  [ -x "$BEFORE/tools/lwload/lwload" ] || { echo "bench-refusals: no $BEFORE/tools/lwload/lwload" >&2; exit 2; }
  configs+=(before:none before:populate before:cachestat before:io_uring_eperm before:vm_readv before:all)
fi
out=$dir/times
: >"$out"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for ((rep = -1; rep < reps; ++rep)); do  # round -1 warms the binaries and the files' mappings up, unrecorded
  for f in "${formats[@]}"; do
    for c in "${configs[@]}"; do t=$(load "$dir/model.$f" "$c"); ((rep < 0)) || echo "warm $f $c $t" >>"$out"; done
    t=$("$python" -c "$populate_py" "$dir/model.$f"); ((rep < 0)) || echo "warm $f POPULATE_READ $t" >>"$out"
  done
done
# In-process: each configuration a process of 1 + INPROC_LOADS loads, the first unrecorded.
inproc() {  # inproc FILE REFUSAL | before:REFUSAL: lines "SECONDS CPU_SECONDS"
  local exe=$dir/warm-loads refusal=$2
  if [ "${refusal#before:}" != "$refusal" ]; then exe=$dir/warm-loads-before refusal=${refusal#before:}; fi
  if [ "$refusal" = plain ]; then "$exe" "$1" "$inproc_loads"; else "$refuse" "$refusal" -- "$exe" "$1" "$inproc_loads"; fi
}
for ((rep = 0; rep < reps; ++rep)); do
  for f in "${formats[@]}"; do
    for c in "${configs[@]}"; do inproc "$dir/model.$f" "$c" | sed "s/^/inproc $f $c /" >>"$out"; done
  done
done
for ((rep = 0; rep < cold_reps; ++rep)); do
  for f in "${formats[@]}"; do
    for c in plain all; do evict "$dir/model.$f"; echo "cold $f $c $(load "$dir/model.$f" "$c")" >>"$out"; done
    evict "$dir/model.$f"
    echo "cold $f POPULATE_READ $("$python" -c "$populate_py" "$dir/model.$f")" >>"$out"
  done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

"$python" - "$out" "$size" "$reps" "$cold_reps" "$load_before" "$load_after" "${configs[*]}" "$dir/model.safetensors" "$inproc_loads" <<'EOF'
import collections, os, statistics, sys
path, size, reps, cold_reps, before, after, configs, model, inproc_loads = sys.argv[1:]
gib = os.path.getsize(model) / 2**30
rows, cpu = collections.defaultdict(list), collections.defaultdict(list)
for line in open(path):
    temp, fmt, config, seconds, cpu_seconds = line.split()
    rows[temp, fmt, config].append(float(seconds))
    if cpu_seconds != "-": cpu[temp, fmt, config].append(float(cpu_seconds))
med = {k: statistics.median(v) for k, v in rows.items()}
cpu_med = {k: statistics.median(v) for k, v in cpu.items()}
print(f"load average (1, 5, 15 min) before: {before}; after: {after}")
def table(temp, fmt, names, n):
    print()
    how = "several loads in one process (tools/bench/warm_loads.cpp)" if temp == "inproc" else "lwload load --placement zero-copy"
    print(f"{'warm' if temp == 'inproc' else temp} zero-copy load of a {size} {fmt} on host ({how}), median of {n}, one run")
    print()
    print("| what the kernel refuses | time to ready | (min–max) | vs nothing refused | overhead per GiB | vs mmap + MADV_POPULATE_READ | process CPU | vs nothing refused |")
    print("|---|---|---|---|---|---|---|---|")
    ref = "none" if (temp, fmt, "none") in med else "plain"  # the baseline: nothing refused
    base, floor = med[temp, fmt, ref], med[temp, fmt, "POPULATE_READ"]
    for c in names:
        v = rows[temp, fmt, c]
        m = med[temp, fmt, c]
        name = "nothing (the launcher, an empty filter)" if c == "none" else "nothing, without the launcher" if c == "plain" else "(one mmap + MADV_POPULATE_READ of the file)" if c == "POPULATE_READ" else f"`{c}`"
        name = name.replace("`before:none`", "before: nothing (the launcher)").replace("`before:", "before: `")
        over = "" if c in ("none", "plain", "POPULATE_READ") else f"{(m - base) * 1e3 / gib:+.2f} ms"
        k = (temp, fmt, c)
        cpu_cells = f"{cpu_med[k]*1e3:.1f} ms | {cpu_med[k]/cpu_med[temp, fmt, ref]:.2f}×" if k in cpu_med else " | "
        print(f"| {name} | {m*1e3:.1f} ms | {min(v)*1e3:.1f}–{max(v)*1e3:.1f} | {m/base:.2f}× | {over} | {m/floor:.2f}× | {cpu_cells} |")
for fmt in ("safetensors", "gguf"):
    table("warm", fmt, configs.split() + ["POPULATE_READ"], reps)
for fmt in ("safetensors", "gguf"):
    # No floor here: the mmap row is a process's first mapping, these loads are not.
    med["inproc", fmt, "POPULATE_READ"] = float("nan")
    table("inproc", fmt, configs.split(), f"{reps} processes × {inproc_loads} loads after a first")
if int(cold_reps):
    for fmt in ("safetensors", "gguf"):
        table("cold", fmt, ["plain", "all", "POPULATE_READ"], cold_reps)
EOF
