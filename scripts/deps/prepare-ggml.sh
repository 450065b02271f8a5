#!/usr/bin/env bash
# dependencies: fetches llama.cpp's prebuilt ggml from npm (pinned) into subprojects/ggml.
# Prepares ggml for lwload's ggml adapter (-Dggml=auto|enabled|disabled). Debian 12 has no ggml, so it
# comes from npm at pinned versions:
#   node-llama-cpp                     llama.cpp's source as a git bundle: the headers (ggml, gguf, llama)
#                                      and gguf-py, the Python GGUF writer the tests use
#   @node-llama-cpp/linux-x64-vulkan   llama.cpp's prebuilt shared libraries of that same source:
#                                      libggml-base, libggml (the backend registry), libggml-vulkan,
#                                      libggml-cpu-<cpu variant> (loaded at run time), libllama
# The tarballs are kept in subprojects/packagecache/ and checked against the sha256 sums below, so
# after the first run nothing is fetched. The result is subprojects/ggml/:
#   meson.build (a Meson subproject: subprojects/packagefiles/ggml/meson.build)  include/  lib/
#   lib/pkgconfig/ggml.pc and llama.pc  gguf-py/  ggml-vocab-llama-spm.gguf  LICENSE  VERSION
#   internal/ggml-backend-impl.h: what a ggml backend implements (the device's interface table), from
#     the same source: the adapter reads a device's buffer_from_host_ptr slot through it (ggml calls
#     the slot unchecked), and tests/ggml registers a fake device with it
# meson finds it there by itself (-Dggml_dir names another folder). Exit 77 when the registry cannot be
# reached and nothing is cached: the ggml suites then skip.
#
#   scripts/deps/prepare-ggml.sh [--force]
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD

# The pins. The bundle's commit is llama.cpp's source of the prebuilt libraries (llama/llama.cpp.info.json
# in the package names its release tag).
version=3.22.1
declare -A sha256=(
  [node-llama-cpp-$version.tgz]=a0d9dd80eacd2ab1cfe71aee57ac8a806487fd70b3d2a38fbec637752d9e5c5f
  [node-llama-cpp-linux-x64-vulkan-$version.tgz]=e10577190fc4bd1649d3b655588e5c7a85fc6b6dbf7136fee596cbe9e25521e7
)
declare -A spec=(
  [node-llama-cpp-$version.tgz]=node-llama-cpp@$version
  [node-llama-cpp-linux-x64-vulkan-$version.tgz]=@node-llama-cpp/linux-x64-vulkan@$version
)
bundle_commit=de3ff815ea7d559ee917f063901b8986f038abc6

cache=$root/subprojects/packagecache
out=$root/subprojects/ggml
stamp="node-llama-cpp $version $bundle_commit backend-impl"
if [ "${1:-}" != --force ] && [ -f "$out/VERSION" ] && [ "$(cat "$out/VERSION")" = "$stamp" ]; then
  cp subprojects/packagefiles/ggml/meson.build "$out/meson.build"  # the subproject's own file may be newer
  echo "prepare-ggml: $out is ready ($stamp)"
  exit 0
fi
if [ "$(uname -m)" != x86_64 ]; then
  echo "prepare-ggml: the pinned prebuilt ggml is x86-64 only; build ggml yourself and pass -Dggml_dir" >&2
  exit 77
fi
mkdir -p "$cache"

for tgz in "${!sha256[@]}"; do
  if [ -f "$cache/$tgz" ] && echo "${sha256[$tgz]}  $cache/$tgz" | sha256sum -c --status; then continue; fi
  command -v npm >/dev/null || { echo "prepare-ggml: npm is not installed and $tgz is not cached" >&2; exit 77; }
  echo "prepare-ggml: fetching ${spec[$tgz]}"
  if ! (cd "$cache" && npm pack --silent "${spec[$tgz]}" >/dev/null 2>"$cache/npm.log"); then
    echo "prepare-ggml: npm could not fetch ${spec[$tgz]} (registry unreachable?):" >&2
    tail -3 "$cache/npm.log" >&2
    exit 77
  fi
  if ! echo "${sha256[$tgz]}  $cache/$tgz" | sha256sum -c --status; then
    echo "prepare-ggml: $tgz does not have the pinned sha256 ${sha256[$tgz]}" >&2
    exit 1
  fi
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rm -rf "$out"
mkdir -p "$out/lib/pkgconfig" "$out/include"

# The libraries. libggml's SONAME carries the variant (libggml.vulkan.v0.5.0.so): keep the file under
# that name and link through a plain libggml.so / libllama.so.
tar -xzf "$cache/node-llama-cpp-linux-x64-vulkan-$version.tgz" -C "$tmp"
bins=$tmp/package/bins/linux-x64-vulkan
cp -a "$bins"/lib*.so "$out/lib/"
ggml_soname=$(cd "$out/lib" && ls libggml.*.so)
llama_soname=$(cd "$out/lib" && ls libllama.*.so)
ln -s "$ggml_soname" "$out/lib/libggml.so"
ln -s "$llama_soname" "$out/lib/libllama.so"
cp "$tmp/package/LICENSE" "$out/LICENSE"

# The headers and gguf-py, from the source bundle at the pinned commit.
tar -xzf "$cache/node-llama-cpp-$version.tgz" -C "$tmp" package/llama/gitRelease.bundle
git init -q --bare "$tmp/src.git"
git -C "$tmp/src.git" fetch -q "$tmp/package/llama/gitRelease.bundle" HEAD
if [ "$(git -C "$tmp/src.git" rev-parse FETCH_HEAD)" != "$bundle_commit" ]; then
  echo "prepare-ggml: the bundle's commit is not the pinned $bundle_commit" >&2
  exit 1
fi
git -C "$tmp/src.git" archive FETCH_HEAD ggml/include ggml/src/ggml-backend-impl.h include gguf-py models/ggml-vocab-llama-spm.gguf \
  | tar -x -C "$tmp"
cp "$tmp"/ggml/include/*.h "$tmp"/include/*.h "$out/include/"
mkdir -p "$out/internal"
cp "$tmp/ggml/src/ggml-backend-impl.h" "$out/internal/"
cp -a "$tmp/gguf-py" "$out/gguf-py"
cp "$tmp/models/ggml-vocab-llama-spm.gguf" "$out/"

for lib in ggml llama; do
  requires=""; link="-lggml -lggml-base"
  [ $lib = llama ] && { requires="Requires: ggml"; link="-lllama"; }
  cat > "$out/lib/pkgconfig/$lib.pc" <<EOF
prefix=\${pcfiledir}/../..
libdir=\${prefix}/lib
includedir=\${prefix}/include
backenddir=\${libdir}

Name: $lib
Description: $lib from node-llama-cpp $version (llama.cpp $bundle_commit), prebuilt
Version: $version
$requires
Libs: -L\${libdir} -Wl,-rpath,\${libdir} $link
Cflags: -I\${includedir}
EOF
done
cp subprojects/packagefiles/ggml/meson.build "$out/meson.build"
echo "$stamp" > "$out/VERSION"
echo "prepare-ggml: ggml ready in $out ($stamp; $(ls "$out/lib" | grep -c '^libggml-cpu') CPU variants)"
