#!/usr/bin/env bash
# check: a Meson, pkg-config and CMake consumer each build and run against lwload.
# Builds tests/consumer against lwload three times — as a Meson subproject, and through pkg-config
# and CMake's find_package after `meson install` into a scratch prefix — and runs it, so every way
# users consume lwload stays working.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# 1. Subproject: a copy of the consumer with subprojects/lwload pointing at this tree.
cp -r tests/consumer "$work/app"
mkdir -p "$work/app/subprojects"
ln -s "$root" "$work/app/subprojects/lwload"
model="$(cd "$root/tests/data/gguf" && pwd)/tiny-llama-f32-f16-q8.gguf"
meson setup "$work/build-sub" "$work/app" -Dmodel="$model" --werror >/dev/null
ninja -C "$work/build-sub" >/dev/null
meson test -C "$work/build-sub" --print-errorlogs
echo "consumer: subproject OK"

# 2. Installed: meson install into a prefix, then pkg-config.
meson setup "$work/build-lib" "$root" --prefix="$work/prefix" -Dtests=false -Dexamples=false >/dev/null
ninja -C "$work/build-lib" install >/dev/null
libdir=$(cd "$work/prefix" && dirname "$(find . -name lwload.pc | head -1)")
export PKG_CONFIG_PATH="$work/prefix/$libdir"
export LD_LIBRARY_PATH="$work/prefix/$(dirname "$libdir")"
echo "pkg-config: $(pkg-config --cflags --libs lwload) / $(pkg-config --libs lwload-profile)"
meson setup "$work/build-pc" "$work/app" -Dmodel="$model" -Duse_pkgconfig=true --werror >/dev/null
ninja -C "$work/build-pc" >/dev/null
meson test -C "$work/build-pc" --print-errorlogs
echo "consumer: pkg-config OK"

# 3. Installed: a CMake project, find_package(lwload) through lib/cmake/lwload/lwloadConfig.cmake.
cmake -S "$work/app" -B "$work/build-cmake" -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/build-cmake" >/dev/null
"$work/build-cmake/consumer" "$model"
"$work/build-cmake/consumer_c" "$model"
"$work/build-cmake/consumer_profile" "$model"
echo "consumer: CMake OK"
