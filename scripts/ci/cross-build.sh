#!/usr/bin/env bash
# CI: cross-builds for 64-bit and 32-bit ARM and smoke-runs the CLI under qemu-user.
# Cross-builds lwload (library, CLI, examples and test suites) for a 64-bit or 32-bit ARM
# userland with Debian 12's cross toolchains, then runs a single-threaded smoke of the CLI under
# qemu-user where it works.
#   scripts/ci/cross-build.sh aarch64|armhf [extra meson options...]
# Installs what it needs (as root or through sudo): the cross compiler and qemu-user from the
# archive, and the target's libraries as a sysroot unpacked from the archive's :arm64 / :armhf
# packages (apt-get download + dpkg-deb -x). A sysroot, not multiarch -dev packages: those must
# match the host's versions exactly (Multi-Arch: same), which an installed system out of step with
# the archive (linux-libc-dev, say) refuses. Builds in build-cross/ARCH (warnings are errors);
# Level Zero is disabled (Debian has no ARM loader). Then builds again with every optional backend
# disabled (OpenCL, Vulkan, Level Zero, io_uring): the rest must build without them.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD

arch=${1:?usage: scripts/ci/cross-build.sh aarch64|armhf [meson options...]}
shift
# armhf: -Wno-psabi silences GCC's note that 32-bit ARM passes some structures differently since
# GCC 7.1 (one per function taking a span), about ABI mixing lwload does not do;
# -Wno-maybe-uninitialized, GCC 12's false positive on std::variant's storage at -O2 for this
# target (lwload::MetaValue), which x86-64 and aarch64 do not report.
case "$arch" in
  aarch64) debarch=arm64 triplet=aarch64-linux-gnu qemu=qemu-aarch64 extra="" ;;
  armhf) debarch=armhf triplet=arm-linux-gnueabihf qemu=qemu-arm extra=", '-Wno-psabi', '-Wno-maybe-uninitialized'" ;;
  *) echo "cross-build: unknown arch '$arch' (aarch64 or armhf)" >&2; exit 2 ;;
esac

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
apt_install() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] || $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}"
}

# The build machine's tools: the cross compiler, the code generators, qemu-user for the smoke.
apt_install "g++-$triplet" meson ninja-build pkg-config flatbuffers-compiler glslc qemu-user
if ! dpkg --print-foreign-architectures | grep -qx "$debarch"; then
  $SUDO dpkg --add-architecture "$debarch"
  # A mirror mid-sync may fail one index (security's, say): the main archive's are what count.
  $SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq || echo "cross-build: apt-get update reported errors; going on"
fi

# The target's libraries: what lwload links (Boost.JSON, liburing, flatbuffers, the OpenCL and
# Vulkan loaders) with their -dev files, and the architecture-independent headers it includes.
target_pkgs=(libboost1.81-dev libboost-json1.81-dev libboost-json1.81.0 libboost-container1.81-dev
             libboost-container1.81.0 libboost-system1.81-dev libboost-system1.81.0
             liburing-dev liburing2 libflatbuffers-dev libflatbuffers2
             ocl-icd-opencl-dev ocl-icd-libopencl1 libvulkan-dev libvulkan1)
all_pkgs=(opencl-c-headers opencl-clhpp-headers doctest-dev)
sysroot=$root/build-cross/sysroot-$debarch
if [ ! -f "$sysroot/.complete" ]; then
  rm -rf "$sysroot"
  mkdir -p "$sysroot"
  debs=$(mktemp -d)
  chmod 755 "$debs"  # apt-get download fetches as the _apt user
  (cd "$debs" && apt-get download -q "${target_pkgs[@]/%/:$debarch}" "${all_pkgs[@]}")
  for deb in "$debs"/*.deb; do dpkg-deb -x "$deb" "$sysroot"; done
  rm -rf "$debs"
  touch "$sysroot/.complete"
fi

# The sysroot as a second machine file, beside the toolchain's in cross/.
mkdir -p "build-cross"
machine=$root/build-cross/sysroot-$debarch.ini
libdir=$sysroot/usr/lib/$triplet
cat >"$machine" <<EOF
[properties]
sys_root = '$sysroot'
pkg_config_libdir = ['$libdir/pkgconfig', '$sysroot/usr/share/pkgconfig']
boost_includedir = '$sysroot/usr/include'
boost_librarydir = '$libdir'

[built-in options]
c_args = ['-isystem', '$sysroot/usr/include'$extra]
cpp_args = ['-isystem', '$sysroot/usr/include'$extra]
c_link_args = ['-L$libdir', '-Wl,-rpath-link,$libdir']
cpp_link_args = ['-L$libdir', '-Wl,-rpath-link,$libdir']
EOF

export CCACHE_DIR=${CCACHE_DIR:-$root/build-cross/ccache}
setup() {  # DIR OPTIONS...
  local dir=$1
  shift
  if [ -f "$dir/build.ninja" ]; then
    meson setup --reconfigure "$dir" "$@" >/dev/null
  else
    meson setup "$dir" --cross-file "cross/$triplet.ini" --cross-file "$machine" --werror "$@"
  fi
}

start=$(date +%s)
build=build-cross/$arch
# Level Zero: Debian has no ARM loader; XRT: Debian ships it for x86-64 only. ggml and ONNX
# Runtime: the pinned prebuilt ones (scripts/deps/prepare-ggml.sh, prepare-onnxruntime.sh) are x86-64
# only; -Dggml_dir and -Donnxruntime_dir name ARM builds of them.
setup "$build" -Dlevel_zero=disabled -Dggml=disabled -Donnxruntime=disabled -Dxrt=disabled "$@"
ninja -C "$build"
# Every optional backend off: the library, the CLI, the examples and the tests still build.
# (CROSS_MINIMAL=0 skips this second build.)
if [ "${CROSS_MINIMAL:-1}" != 0 ]; then
  minimal=build-cross/$arch-minimal
  setup "$minimal" -Dlevel_zero=disabled -Dopencl=disabled -Dvulkan=disabled -Dio_uring=disabled -Dggml=disabled -Donnxruntime=disabled -Dxrt=disabled "$@"
  ninja -C "$minimal"
fi
echo "cross-build: $arch built in $(( $(date +%s) - start )) s"

# The smoke: inspect, plan and a zero-copy load with --verify, one thread (reads by pread). qemu-user
# hangs at the first thread a guest creates on some machines, so each step has a time limit and a
# hang is reported, not failed.
if command -v "$qemu" >/dev/null 2>&1; then
  smoke=$(mktemp -d)
  trap 'rm -rf "$smoke"' EXIT
  run() {
    QEMU_LD_PREFIX=/usr/$triplet timeout 120 "$qemu" -E "LD_LIBRARY_PATH=$libdir" "$build/tools/lwload/lwload" "$@"
  }
  status=0
  for step in "synth $smoke/m.gguf --format gguf --size 4MiB --tensors 16" \
              "synth $smoke/m.safetensors --size 4MiB --tensors 16" \
              "inspect $smoke/m.gguf" "plan $smoke/m.safetensors --device host" \
              "load $smoke/m.gguf --device host --placement zero-copy --io pread --verify" \
              "load $smoke/m.safetensors --device host --placement zero-copy --io pread --verify"; do
    # shellcheck disable=SC2086
    if run $step >"$smoke/out" 2>&1; then
      echo "cross-build: smoke ok: lwload $step" | sed "s|$smoke/||"
    else
      rc=$?
      if [ "$rc" -eq 124 ]; then
        echo "cross-build: smoke hung under $qemu (qemu-user and guest threads on this machine): lwload $step" | sed "s|$smoke/||"
      else
        echo "cross-build: smoke FAILED ($rc): lwload $step" >&2
        cat "$smoke/out" >&2
        status=1
      fi
    fi
  done
  exit "$status"
fi
