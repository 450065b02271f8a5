#!/usr/bin/env bash
# The long fuzz run (not run in CI): every libFuzzer harness in fuzz/ (fuzz_<format>, fuzz_detect,
# fuzz_folder_<format>, fuzz_profile_report) for RUNS executions each (default 10 million), one job
# at a time, under ASan + UBSan (clang; the same build as scripts/check/fuzz.sh, in build-fuzz/). UBSan
# halts on its first report, so every sanitizer finding is a crash libFuzzer records. Each starts
# from the committed corpus, fuzz/corpus/<harness>, and fuzz/seeds/<harness>; what it finds goes to
# build-fuzz/fuzz/corpus-<harness>, which `FINDS=1 scripts/check/fuzz-corpus.sh` folds into the committed
# corpus when asked.
#
#   scripts/check/fuzz-long.sh [RUNS] [HARNESS...]
#   MAX_SECONDS=N  stop each harness after N seconds too (a partial run; its executions are recorded)
#   BUILD=dir      the clang build folder (default build-fuzz)
#
# Per harness it writes build-fuzz/fuzz-long/<harness>.log and appends a line to
# build-fuzz/fuzz-long/summary.tsv: harness, executions reached, seconds, reports (crash, leak,
# timeout, OOM and sanitizer reports), corpus size. The figures go into docs/FUZZING.md.
# Exit status 1 when any harness reported anything.
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${1:-10000000}
shift || true
build=${BUILD:-build-fuzz}
max_seconds=${MAX_SECONDS:-0}
if [ ! -f "$build/build.ninja" ]; then
  CXX=clang++ meson setup "$build" -Dfuzz=true -Dtests=true -Dtools=false -Dexamples=false \
    -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debugoptimized
fi
# The harnesses alone (scripts/check/fuzz.sh builds the whole tree).
ninja -C "$build" build.ninja  # regenerated first: the target list below is read from it
targets=$(ninja -C "$build" -t targets all | sed -n 's|^\(fuzz/fuzz_[a-z_]*\): cpp_LINKER.*|\1|p' | sort -u)
ninja -C "$build" -j "${NINJA_JOBS:-1}" $targets
out="$build/fuzz-long"
mkdir -p "$out"
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
shopt -s nullglob
if [ $# -gt 0 ]; then harnesses=("$@"); else harnesses=(); for h in "$build"/fuzz/fuzz_*; do
  [ -f "$h" ] && [ -x "$h" ] && harnesses+=("$(basename "$h")"); done; fi
status=0
for name in "${harnesses[@]}"; do
  harness="$build/fuzz/$name"
  corpus="$build/fuzz/corpus-$name"
  mkdir -p "$corpus"
  seeds=()
  for dir in "fuzz/corpus/$name" "fuzz/seeds/${name#fuzz_}"; do [ -d "$dir" ] && seeds+=("$dir"); done
  options=(-runs="$runs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$out/$name-")
  [ "$max_seconds" -gt 0 ] && options+=(-max_total_time="$max_seconds")
  case "$name" in fuzz_folder_*) options+=(-dict=fuzz/folder.dict) ;; esac
  echo "fuzz-long: $name, $runs runs, at most ${max_seconds}s (0: no limit), started $(date -u +%FT%TZ)"
  start=$(date +%s)
  set +e
  "$harness" "${options[@]}" "$corpus" "${seeds[@]}" >"$out/$name.log" 2>&1
  rc=$?
  set -e
  seconds=$(( $(date +%s) - start ))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/$name.log" | tail -n 1)
  reports=$(grep -c -E '^==[0-9]+==ERROR|runtime error:|^SUMMARY: libFuzzer|^SUMMARY: AddressSanitizer|^SUMMARY: UndefinedBehaviorSanitizer' "$out/$name.log" || true)
  found=("$out/$name-"*)  # crash-, leak-, timeout-, oom- files libFuzzer wrote (nullglob: none, none)
  artifacts=${#found[@]}
  [ "$rc" -ne 0 ] && [ "$reports" -eq 0 ] && reports=1
  [ "$artifacts" -gt "$reports" ] && reports=$artifacts
  printf '%s\t%s\t%s\t%s\t%s\n' "$name" "${execs:-0}" "$seconds" "$reports" "$(ls "$corpus" | wc -l)" | tee -a "$out/summary.tsv"
  [ "$reports" -ne 0 ] && status=1
done
exit $status
