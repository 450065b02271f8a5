#!/usr/bin/env bash
# Installs, from Debian 12's own archive, everything lwload needs to build, test and fuzz.
# Idempotent: packages already present are left alone. Run as root (or through sudo).
set -euo pipefail

packages=(
  # toolchain and build system
  g++ clang libclang-rt-14-dev lld meson ninja-build pkg-config
  # libraries lwload links
  libboost1.81-dev libboost-json1.81-dev liburing-dev
  libflatbuffers-dev flatbuffers-compiler
  ocl-icd-opencl-dev opencl-c-headers opencl-clhpp-headers
  libze-dev libze1
  libvulkan-dev mesa-vulkan-drivers vulkan-validationlayers glslc
  # test runtime and writers
  doctest-dev pocl-opencl-icd mesa-opencl-icd clinfo python3-onnx python3-numpy python3-torch
  # SVG render checks (test_profile) and the demo's PNG: rsvg-convert
  librsvg2-bin
)

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
