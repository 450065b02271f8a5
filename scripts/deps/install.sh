#!/usr/bin/env bash
# dependencies: installs Debian 12's packages for building, testing or fuzzing.
# Installs, from Debian 12's own archive, what lwload needs for one purpose, and nothing more:
#   build  the library, the CLI and the examples (what demo.sh needs)
#   test   build + the test toolchain: real runtimes (PoCL, rusticl, lavapipe + validation layer),
#          the formats' own writers (python3-onnx, python3-torch), the SVG renderer
#   fuzz   build + clang and its sanitizer runtimes (scripts/check/fuzz.sh)
#   all    everything
# Usage: install.sh [build|test|fuzz|all]... (default: all). Idempotent: packages already
# present are left alone. Run as root (or through sudo).
set -euo pipefail

build=(
  # toolchain and build system
  g++ meson ninja-build pkg-config
  # libraries lwload links, and what the build generates code with (flatc, glslc)
  libboost1.81-dev libboost-json1.81-dev liburing-dev
  libflatbuffers-dev flatbuffers-compiler
  ocl-icd-opencl-dev opencl-c-headers opencl-clhpp-headers
  libze-dev libze1
  # XRT (AMD NPUs, Alveo): the xrt backend; tested under XRT with tests/xrt_sim as its driver shim
  libxrt-dev libxrt1
  libvulkan-dev glslc
  # the doctest suites are configured with the build (meson setup needs the header)
  doctest-dev
  # the kernel-feature matrix's launcher (tests/support/refuse.c: seccomp refusals)
  libseccomp-dev
  # the demo's PNG of its SVG
  librsvg2-bin
)
test=(
  # real runtimes: OpenCL on PoCL and rusticl, Vulkan on lavapipe under the validation layer
  pocl-opencl-icd mesa-opencl-icd clinfo mesa-vulkan-drivers vulkan-validationlayers
  # the formats' own writers and readers the tests compare against (flatc's Python classes need
  # the flatbuffers runtime)
  python3-onnx python3-numpy python3-torch python3-flatbuffers
  # scripts/check/consumers.sh builds a CMake consumer against the installed tree
  cmake
  # scripts/check/format.sh: the layout .clang-format describes
  clang-format-14
)
# The real-file suite fetches model files from the npm registry with npm: Debian's, unless a
# Node.js that brings its own npm is installed already.
command -v npm >/dev/null 2>&1 || test+=(nodejs npm)
fuzz=(
  clang libclang-rt-14-dev lld
)

packages=()
for purpose in "${@:-all}"; do
  case "$purpose" in
    build) packages+=("${build[@]}") ;;
    test) packages+=("${build[@]}" "${test[@]}") ;;
    fuzz) packages+=("${build[@]}" "${fuzz[@]}") ;;
    all) packages+=("${build[@]}" "${test[@]}" "${fuzz[@]}") ;;
    *) echo "install-deps: unknown purpose '$purpose' (build, test, fuzz or all)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: installed ${missing[*]}"
