#!/usr/bin/env bash
# Builds the libFuzzer harnesses with clang (+ ASan/UBSan) and runs each for SECONDS seconds
# (default 20) on its seed corpus from tests/data/<format> and fuzz/seeds/<format> (small
# committed seeds for formats tests/data lacks, e.g. torch.save checkpoints); the hostile-folder
# harnesses fuzz_folder_<format> also get fuzz/seeds/folder_<format> (models naming the folder's FIFO,
# links out and loops) and fuzz/folder.dict. Any crash fails the script. The same clang build also
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
  format=${name#fuzz_}
  format=${format#folder_}  # fuzz_folder_<format>: the reader's own samples, and folder_<format> seeds
  for dir in "tests/data/$format" "fuzz/seeds/${name#fuzz_}"; do
    [ -d "$dir" ] && seeds+=("$dir")
  done
  options=()
  case "$name" in fuzz_folder_*) options+=(-dict=fuzz/folder.dict) ;; esac
  echo "fuzz: $name for ${seeds[*]:-no seeds} ${seconds}s"
  "$harness" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$build/fuzz/" "${options[@]}" \
    "$corpus" "${seeds[@]}" \
    2>&1 | tail -n 3
done
