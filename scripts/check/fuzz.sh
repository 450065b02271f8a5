#!/usr/bin/env bash
# Builds the libFuzzer harnesses with clang (+ ASan/UBSan) and runs each for SECONDS seconds
# (default 20) from its committed corpus, fuzz/corpus/<harness> (minimised; scripts/check/fuzz-corpus.sh
# grows it from tests/data, the suites' cases and the real files), and its seeds in
# fuzz/seeds/<harness> (e.g. torch.save checkpoints; for the hostile-folder harnesses
# fuzz_folder_<format>, models naming the folder's FIFO, links out and loops, with
# fuzz/folder.dict). New finds go to a scratch corpus, build-fuzz/fuzz/corpus-<harness>, never into
# the repository. Any crash fails the script. The same clang build also
# compiles the library, the CLI and every test suite: CI then runs the suites in it
# (BUILD_DIR=build-fuzz scripts/test.sh), so they run under ASan/UBSan as well.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-20}
build=build-fuzz
if [ ! -f "$build/build.ninja" ]; then
  CXX=clang++ meson setup "$build" -Dfuzz=true -Dtests=true -Dtools=true -Dexamples=true \
    -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debugoptimized
fi
ninja -C "$build"
shopt -s nullglob
harnesses=("$build"/fuzz/fuzz_*)
if [ ${#harnesses[@]} -eq 0 ]; then echo "fuzz: no harnesses built"; exit 0; fi
for harness in "${harnesses[@]}"; do
  [ -f "$harness" ] && [ -x "$harness" ] || continue
  name=$(basename "$harness")
  corpus="$build/fuzz/corpus-$name"
  mkdir -p "$corpus"
  seeds=()
  for dir in "fuzz/corpus/$name" "fuzz/seeds/${name#fuzz_}"; do
    [ -d "$dir" ] && seeds+=("$dir")
  done
  options=()
  case "$name" in fuzz_folder_*) options+=(-dict=fuzz/folder.dict) ;; esac
  echo "fuzz: $name for ${seeds[*]:-no seeds} ${seconds}s"
  "$harness" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$build/fuzz/" "${options[@]}" \
    "$corpus" "${seeds[@]}" \
    2>&1 | tail -n 3
done
