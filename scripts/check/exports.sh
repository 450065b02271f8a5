#!/usr/bin/env bash
# check: the shared libraries export their API and nothing else (the exports test).
# lwload's shared libraries export their API and nothing else — no Boost symbol, no internal lwload
# namespace (formats, loading, io, opencl, level_zero, vulkan, cuda, ...), no third-party template:
#   liblwload.so          the C API (lwload_*) and the public C++ API (namespace lwload, its type
#                         infos and vtables), with no lwload::profile symbol (that is
#                         liblwload-profile's);
#   liblwload-profile.so  lwload::profile alone.
#   exports.sh build/liblwload.so [build/liblwload-profile.so]
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: exports.sh LIBRARY..."; exit 2; }
fail=0
check() {
  local lib=$1 kind=$2
  # Each symbol with its version (NAME@@NODE); the version nodes themselves are absolute symbols.
  local versioned symbols
  versioned=$(nm -DC --defined-only --with-symbol-versions "$lib" | awk '$2 != "A"' | cut -d' ' -f3-)
  symbols=$(sed -E 's/@@?[A-Z_0-9]+$//' <<<"$versioned")
  # The C API is the versioned ABI: every lwload_* symbol carries a LWLOAD_<N> node (lib/lwload.map),
  # the C++ API its own LWLOAD_CXX_<N> node; an unversioned or misplaced symbol fails.
  local unversioned misplaced internal foreign wanted
  unversioned=$(grep -vE '@@LWLOAD_(CXX_)?[0-9]+$' <<<"$versioned" || true)
  if [ -n "$unversioned" ]; then
    echo "$lib: symbols without a version node:"; head -20 <<<"$unversioned"; fail=1
  fi
  misplaced=$(grep -E '^lwload_[a-z_]+@@' <<<"$versioned" | grep -vE '@@LWLOAD_[0-9]+$' || true)
  misplaced+=$(grep -E '^(lwload::|(typeinfo|typeinfo name|vtable) for lwload::)' <<<"$versioned" | grep -vE '@@LWLOAD_CXX_[0-9]+$' || true)
  if [ -n "$misplaced" ]; then
    echo "$lib: symbols in the wrong version node (C: LWLOAD_<N>, C++: LWLOAD_CXX_<N>):"; head -20 <<<"$misplaced"; fail=1
  fi
  if grep -q 'boost::' <<<"$symbols"; then
    echo "$lib: Boost symbols exported:"; grep 'boost::' <<<"$symbols" | head -20; fail=1
  fi
  if [ "$kind" = profile ]; then
    # Only the profiler's namespace.
    foreign=$(grep -vE '^((typeinfo|typeinfo name|vtable) for )?lwload::profile::' <<<"$symbols" || true)
    wanted=('lwload::profile::profile_load(' 'lwload::profile::report_to_svg' 'lwload::profile::read_memory_now(')
  else
    # Public names are CamelCase classes or lower-case functions directly in lwload; a lower-case
    # name followed by :: is a namespace, and none is public here (lwload::profile is
    # liblwload-profile's).
    internal=$(grep -E '(^|for )lwload::[a-z_0-9]+::' <<<"$symbols" || true)
    if [ -n "$internal" ]; then
      echo "$lib: internal lwload namespaces exported:"; head -20 <<<"$internal"; fail=1
    fi
    foreign=$(grep -vE '^(lwload_[a-z_]+$|lwload::|(typeinfo|typeinfo name|vtable) for lwload::)' <<<"$symbols" || true)
    wanted=('lwload_load' 'lwload_version_number' 'lwload_manifest_open' 'lwload::load(' 'lwload::open_manifest(' 'typeinfo for lwload::Error')
  fi
  if [ -n "$foreign" ]; then
    echo "$lib: symbols outside the API exported:"; head -20 <<<"$foreign"; fail=1
  fi
  for w in "${wanted[@]}"; do
    grep -qF "$w" <<<"$symbols" || { echo "$lib: missing export: $w"; fail=1; }
  done
  echo "$lib: $(wc -l <<<"$symbols") symbols exported: $(grep -c '@@LWLOAD_1$' <<<"$versioned" || true) C at LWLOAD_1, $(grep -c '@@LWLOAD_CXX_' <<<"$versioned" || true) C++ at LWLOAD_CXX_0"
}
for lib in "$@"; do
  case "$(basename "$lib")" in
    liblwload-profile.so*) check "$lib" profile ;;
    *) check "$lib" core ;;
  esac
done
[ "$fail" = 0 ] && echo "every symbol exported is API"
exit "$fail"
