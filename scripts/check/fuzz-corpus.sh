#!/usr/bin/env bash
# Grows the committed fuzz corpus, fuzz/corpus/<harness>/, and minimises it: collects candidate
# inputs, then per harness lets libFuzzer (-merge=1) keep, from the current corpus and the
# candidates together, the smallest set of inputs that reaches every coverage feature any of them
# reaches. Candidates, each at most 64 KiB:
#   - tests/data and fuzz/seeds (the formats' own writers, the hostile-folder models);
#   - what fuzz/generate/*.py write (shapes no sample has: sparse TFLite, GGUF of every KV type...);
#   - the real_files suite's cached models (REAL_MODELS, default build/tests/real-models), when there;
#   - every file the suites write into their scratch folders while they run (the hostile, red-team
#     and format cases), caught by fuzz/harvest_writes.c (LD_PRELOAD) in the gcc build BUILD.
# Then the caps: no file over 64 KiB, about 1 MiB per harness (the largest files go first).
#
#   scripts/check/fuzz-corpus.sh [HARNESS...]
#   BUILD=dir       the gcc build whose suites are run (default build; configured and its suites built
#                   unless BUILD_SUITES=0: then the suites already built there are run as they are)
#   FUZZ_BUILD=dir  the clang ASan/UBSan build of the harnesses (default build-fuzz, as scripts/check/fuzz.sh)
#   FINDS=1         also take what fuzz.sh and fuzz-long.sh found (FUZZ_BUILD/fuzz/corpus-<harness>)
#   HARVEST=0       do not run the suites: take the files an earlier run harvested
#                   (FUZZ_BUILD/fuzz-corpus/harvest)
#   SUITES="..."    the suites run for their files (default below)
# A harness that crashes on a candidate is reported (its log under FUZZ_BUILD/fuzz-corpus/) and the
# script exits 1; libFuzzer's merge goes on past a crash, so the corpus is still written.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD:-build}
fuzz_build=${FUZZ_BUILD:-build-fuzz}
real_models=${REAL_MODELS:-$build/tests/real-models}
suites=${SUITES:-hostile containment amplification faults onnx gguf safetensors tfjs tflite pytorch \
  pickle_protocols json_stream profile cli}
max_file=65536
max_harness=$((1024 * 1024))

if [ ! -f "$fuzz_build/build.ninja" ]; then
  CXX=clang++ meson setup "$fuzz_build" -Dfuzz=true -Dtests=true -Dtools=true -Dexamples=true \
    -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debugoptimized
fi
ninja -C "$fuzz_build" build.ninja  # regenerated first: the target list below is read from it
targets=$(ninja -C "$fuzz_build" -t targets all | sed -n 's|^\(fuzz/fuzz_[a-z_]*\): cpp_LINKER.*|\1|p' | sort -u)
ninja -C "$fuzz_build" $targets

work="$fuzz_build/fuzz-corpus"
candidates="$work/candidates"
rm -rf "$candidates" "$work/generated" "$work"/fuzz_*
mkdir -p "$candidates" "$work/generated" "$work/harvest"

# Copies every regular file of at most max_file bytes found under the given paths into
# candidates/, named by content (duplicates collapse). Further find(1) tests may follow a "--".
collect() {
  local paths=() tests=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do paths+=("$1"); shift; done
  [ $# -gt 0 ] && shift && tests=("$@")
  find "${paths[@]}" -type f -size -$((max_file + 1))c "${tests[@]}" -print0 2>/dev/null |
    while IFS= read -r -d '' file; do
      cp "$file" "$candidates/$(sha1sum <"$file" | cut -c1-40)"
    done
}
size_of() { find "$1" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }'; }

collect tests/data fuzz/seeds
for generator in fuzz/generate/*.py; do
  [ -f "$generator" ] || continue
  echo "fuzz-corpus: $generator"
  /usr/bin/python3 "$generator" "$work/generated/$(basename "$generator" .py)"
done
collect "$work/generated"
[ "${FINDS:-0}" != 0 ] && collect "$fuzz_build"/fuzz/corpus-*
# The model files only (manifests, not their shards), whose licences tests/real/models.tsv lists.
[ -d "$real_models" ] && collect "$real_models" -- \( -name '*.json' -o -name '*.onnx' -o -name '*.tflite' \
  -o -name '*.gguf' -o -name '*.safetensors' \) -not -path '*/node_modules/*' -not -path '*/tfjs-reference/*'

if [ "${HARVEST:-1}" != 0 ]; then
  if [ ! -f "$build/build.ninja" ]; then meson setup "$build" --werror; fi
  [ "${BUILD_SUITES:-1}" != 0 ] && ninja -C "$build" tools/lwload/lwload $(printf 'tests/test_%s ' $suites)
  cc -std=c11 -O2 -Wall -Wextra -Werror -shared -fPIC -o "$work/harvest_writes.so" fuzz/harvest_writes.c -ldl
  scratch=$(realpath "$work")/scratch
  mkdir -p "$scratch"
  # Each suite as meson test runs it (its environment, tests/meson.build's test_vars), its scratch
  # folder ours; the verdicts do not matter here, only what the suites write.
  rm -rf "$work/harvest" "$scratch" && mkdir -p "$work/harvest" "$scratch"
  for suite in $suites; do
    echo "fuzz-corpus: suite $suite"
    env LD_PRELOAD="$(realpath "$work/harvest_writes.so")" LWLOAD_HARVEST_DIR="$(realpath "$work/harvest")" \
      LWLOAD_HARVEST_UNDER="$scratch:/tmp:${TMPDIR:-/tmp}" LWLOAD_HARVEST_MAX=$max_file \
      LWLOAD_TESTDATA="$PWD/tests/data" LWLOAD_SCRATCH="$scratch" LWLOAD_SOURCE_ROOT="$PWD" \
      LWLOAD_EXE="$(realpath "$build/tools/lwload/lwload")" \
      timeout 900 "$build/tests/test_$suite" >"$work/suite-$suite.log" 2>&1 || true
  done
fi
echo "fuzz-corpus: $(ls "$work/harvest" | wc -l) distinct small files the suites wrote"
collect "$work/harvest"
echo "fuzz-corpus: $(ls "$candidates" | wc -l) candidates"

export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export LLVM_PROFILE_FILE=/dev/null  # a FUZZ_BUILD with source-based coverage (scripts/check/fuzz-coverage.sh's)
if [ $# -gt 0 ]; then harnesses=("$@"); else harnesses=(); for h in "$fuzz_build"/fuzz/fuzz_*; do
  [ -f "$h" ] && [ -x "$h" ] && harnesses+=("$(basename "$h")"); done; fi
status=0
total_files=0 total_bytes=0
for name in "${harnesses[@]}"; do
  merged="$work/$name"
  mkdir -p "$merged" "fuzz/corpus/$name"
  "$fuzz_build/fuzz/$name" -merge=1 -max_len=$max_file -timeout=10 -rss_limit_mb=2048 \
    -merge_control_file="$work/$name.control" -artifact_prefix="$work/$name-" \
    "$merged" "fuzz/corpus/$name" "$candidates" >"$work/$name.log" 2>&1 || true
  if ! grep -q '^MERGE-OUTER: .* new files with' "$work/$name.log"; then
    echo "fuzz-corpus: $name: the merge did not finish (see $work/$name.log)"; status=1; continue
  fi
  # A crashing input makes libFuzzer restart the merge past it: a second attempt is a crash.
  if grep -q -E '^==[0-9]+==ERROR|runtime error:|deadly signal|^MERGE-OUTER: attempt [2-9]' "$work/$name.log"; then
    echo "fuzz-corpus: $name CRASHED on a candidate (see $work/$name.log):"
    grep -E '^==[0-9]+==ERROR|runtime error:|deadly signal|^MERGE-OUTER: attempt' "$work/$name.log" | sort | uniq -c | head -n 5
    status=1
  fi
  # The per-harness cap: the largest inputs go first.
  while [ "$(size_of "$merged")" -gt $max_harness ]; do
    largest=$(find "$merged" -type f -printf '%s %f\n' | sort -n | tail -n 1)
    echo "fuzz-corpus: $name over $max_harness bytes: leaving out ${largest#* } (${largest%% *} bytes)"
    rm "$merged/${largest#* }"
  done
  rm -rf "fuzz/corpus/$name"
  mv "$merged" "fuzz/corpus/$name"
  files=$(ls "fuzz/corpus/$name" | wc -l)
  bytes=$(size_of "fuzz/corpus/$name")
  total_files=$((total_files + files)) total_bytes=$((total_bytes + bytes))
  printf 'fuzz-corpus: %-26s %5d files %9d bytes\n' "$name" "$files" "$bytes"
done
printf 'fuzz-corpus: %-26s %5d files %9d bytes\n' "all" "$total_files" "$total_bytes"
exit $status
