#!/usr/bin/env bash
# dependencies: fetches ONNX Runtime's prebuilt library from npm (pinned) into subprojects/onnxruntime.
# Prepares ONNX Runtime for lwload's ONNX Runtime adapter (-Donnxruntime=auto|enabled|disabled).
# Debian 12 has no ONNX Runtime, so it comes from npm at a pinned version:
#   com.github.asus4.onnxruntime   ONNX Runtime's prebuilt Linux x86-64 library (libonnxruntime.so,
#                                  SONAME libonnxruntime.so.1) and its C/C++ headers (inside the
#                                  package's iOS framework; the C API is the same on every platform)
# The tarball is kept in subprojects/packagecache/ and checked against the sha256 below, so after the
# first run nothing is fetched. The result is subprojects/onnxruntime/:
#   meson.build (a Meson subproject: subprojects/packagefiles/onnxruntime/meson.build)  include/  lib/
#   lib/pkgconfig/libonnxruntime.pc  LICENSE  VERSION
# meson finds it there by itself (-Donnxruntime_dir names another folder). Exit 77 when the registry
# cannot be reached and nothing is cached: the ONNX Runtime suites then skip.
#
#   scripts/deps/prepare-onnxruntime.sh [--force]
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD

# The pin. The package's version is its own; the library inside is ONNX Runtime 1.29.0 (ORT_API_VERSION 29).
package=com.github.asus4.onnxruntime
version=0.4.9
ort_version=1.29.0
tgz=$package-$version.tgz
sha256=e59788788818fdde1b2e522e766a21ba0f7d8391de55737abf81e32cc801785d

cache=$root/subprojects/packagecache
out=$root/subprojects/onnxruntime
stamp="$package $version (ONNX Runtime $ort_version)"
if [ "${1:-}" != --force ] && [ -f "$out/VERSION" ] && [ "$(cat "$out/VERSION")" = "$stamp" ]; then
  cp subprojects/packagefiles/onnxruntime/meson.build "$out/meson.build"  # the subproject's own file may be newer
  echo "prepare-onnxruntime: $out is ready ($stamp)"
  exit 0
fi
if [ "$(uname -m)" != x86_64 ]; then
  echo "prepare-onnxruntime: the pinned prebuilt ONNX Runtime is x86-64 only; pass -Donnxruntime_dir" >&2
  exit 77
fi
mkdir -p "$cache"
if ! { [ -f "$cache/$tgz" ] && echo "$sha256  $cache/$tgz" | sha256sum -c --status; }; then
  command -v npm >/dev/null || { echo "prepare-onnxruntime: npm is not installed and $tgz is not cached" >&2; exit 77; }
  echo "prepare-onnxruntime: fetching $package@$version (about 150 MB)"
  if ! (cd "$cache" && npm pack --silent "$package@$version" >/dev/null 2>"$cache/npm.log"); then
    echo "prepare-onnxruntime: npm could not fetch $package@$version (registry unreachable?):" >&2
    tail -3 "$cache/npm.log" >&2
    exit 77
  fi
  if ! echo "$sha256  $cache/$tgz" | sha256sum -c --status; then
    echo "prepare-onnxruntime: $tgz does not have the pinned sha256 $sha256" >&2
    exit 1
  fi
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
headers='package/Plugins/iOS~/onnxruntime.xcframework/ios-arm64/onnxruntime.framework/Headers'
tar -xzf "$cache/$tgz" -C "$tmp" package/LICENSE package/Plugins/Linux/x64/libonnxruntime.so "$headers"
rm -rf "$out"
mkdir -p "$out/lib/pkgconfig" "$out/include"
cp "$tmp/package/Plugins/Linux/x64/libonnxruntime.so" "$out/lib/libonnxruntime.so.$ort_version"
ln -s "libonnxruntime.so.$ort_version" "$out/lib/libonnxruntime.so.1"
ln -s libonnxruntime.so.1 "$out/lib/libonnxruntime.so"
cp "$tmp/$headers"/onnxruntime_*.h "$tmp/$headers"/cpu_provider_factory.h "$out/include/"
cp "$tmp/package/LICENSE" "$out/LICENSE"
cat > "$out/lib/pkgconfig/libonnxruntime.pc" <<PC
prefix=\${pcfiledir}/../..
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: libonnxruntime
Description: ONNX Runtime $ort_version from $package $version, prebuilt
Version: $ort_version
Libs: -L\${libdir} -Wl,-rpath,\${libdir} -lonnxruntime
Cflags: -I\${includedir}
PC
cp subprojects/packagefiles/onnxruntime/meson.build "$out/meson.build"
echo "$stamp" > "$out/VERSION"
echo "prepare-onnxruntime: ONNX Runtime ready in $out ($stamp)"
