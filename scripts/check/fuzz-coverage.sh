#!/usr/bin/env bash
# Line coverage of each format reader from the committed fuzz corpus: builds the harnesses alone
# with clang's source-based coverage (-fprofile-instr-generate -fcoverage-mapping, no sanitizers;
# build-coverage/), replays each harness's corpus, fuzz/corpus/<harness>/ (libFuzzer -runs=0:
# every input once, no mutation), merges the profiles and prints a Markdown table per reader
# (fuzz/coverage_table.py groups the sources into readers by file name). docs/FUZZING.md shows it.
#
#   scripts/check/fuzz-coverage.sh [HARNESS...]
#   BUILD=dir         the coverage build folder (default build-coverage)
#   CORPUS=dir        the corpus root (default fuzz/corpus)
#   SHOW=a.cpp,b.cpp  also list the lines of those sources (base names) no input reaches, in
#                     BUILD/coverage/missed.txt (BUILD/coverage/coverage.lcov has every line's count)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD:-build-coverage}
corpus_root=${CORPUS:-fuzz/corpus}
tool() { command -v "$1-14" || command -v "$1"; }  # Debian 12's clang is 14: its profile format
profdata=$(tool llvm-profdata)
cov=$(tool llvm-cov)
if [ ! -f "$build/build.ninja" ]; then
  CXX=clang++ meson setup "$build" -Dfuzz=true -Dtests=false -Dtools=false -Dexamples=false -Dbuildtype=debug \
    -Db_lundef=false -Dcpp_args='-fprofile-instr-generate -fcoverage-mapping' -Dcpp_link_args=-fprofile-instr-generate
fi
ninja -C "$build" build.ninja  # regenerated first: the target list below is read from it
targets=$(ninja -C "$build" -t targets all | sed -n 's|^\(fuzz/fuzz_[a-z_]*\): cpp_LINKER.*|\1|p' | sort -u)
ninja -C "$build" $targets
out="$build/coverage"
rm -rf "$out"
mkdir -p "$out"
if [ $# -gt 0 ]; then harnesses=("$@"); else harnesses=(); for h in "$build"/fuzz/fuzz_*; do
  [ -f "$h" ] && [ -x "$h" ] && harnesses+=("$(basename "$h")"); done; fi
objects=()
for name in "${harnesses[@]}"; do
  [ -d "$corpus_root/$name" ] || { echo "fuzz-coverage: no corpus for $name"; continue; }
  # %m: one profile per instrumented module (the folder harnesses reach the readers in liblwload.so).
  LLVM_PROFILE_FILE="$out/$name-%m.profraw" "$build/fuzz/$name" -runs=0 -timeout=10 -rss_limit_mb=2048 \
    "$corpus_root/$name" >"$out/$name.log" 2>&1
  objects+=(-object "$build/fuzz/$name")
done
for lib in "$build"/liblwload.so; do [ -f "$lib" ] && objects+=(-object "$lib"); done
"$profdata" merge -sparse "$out"/*.profraw -o "$out/all.profdata"
"$cov" export -summary-only -instr-profile="$out/all.profdata" "${objects[@]:1}" >"$out/summary.json" 2>/dev/null
/usr/bin/python3 fuzz/coverage_table.py "$out/summary.json"
"$cov" export -format=lcov -instr-profile="$out/all.profdata" "${objects[@]:1}" >"$out/coverage.lcov" 2>/dev/null
if [ -n "${SHOW:-}" ]; then
  /usr/bin/python3 fuzz/coverage_table.py --missed "$out/coverage.lcov" ${SHOW//,/ } >"$out/missed.txt"
  echo "fuzz-coverage: the lines of ${SHOW} no input reaches are in $out/missed.txt"
fi
