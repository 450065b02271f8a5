#!/usr/bin/env bash
# liblwload exports its API and nothing else: the C API (lwload_*) and the public C++ API
# (namespace lwload, lwload::profile, their type infos and vtables) — no Boost symbol, no internal
# lwload namespace (formats, load, io, opencl, ze, vk, cuda, ...), no third-party template.
#   check-exports.sh build/liblwload.so
set -euo pipefail
lib=${1:?usage: check-exports.sh LIBRARY}
# Each symbol with its version (NAME@@NODE); the version nodes themselves are absolute symbols.
versioned=$(nm -DC --defined-only --with-symbol-versions "$lib" | awk '$2 != "A"' | cut -d' ' -f3-)
symbols=$(sed -E 's/@@?[A-Z_0-9]+$//' <<<"$versioned")
fail=0
# The C API is the versioned ABI: every lwload_* symbol carries a LWLOAD_<N> node (lib/lwload.map),
# the C++ API its own LWLOAD_CXX_<N> node; an unversioned or misplaced symbol fails.
unversioned=$(grep -vE '@@LWLOAD_(CXX_)?[0-9]+$' <<<"$versioned" || true)
if [ -n "$unversioned" ]; then
  echo "symbols without a version node:"; head -20 <<<"$unversioned"; fail=1
fi
misplaced=$(grep -E '^lwload_[a-z_]+@@' <<<"$versioned" | grep -vE '@@LWLOAD_[0-9]+$' || true)
misplaced+=$(grep -E '^(lwload::|(typeinfo|typeinfo name|vtable) for lwload::)' <<<"$versioned" | grep -vE '@@LWLOAD_CXX_[0-9]+$' || true)
if [ -n "$misplaced" ]; then
  echo "symbols in the wrong version node (C: LWLOAD_<N>, C++: LWLOAD_CXX_<N>):"; head -20 <<<"$misplaced"; fail=1
fi
if grep -q 'boost::' <<<"$symbols"; then
  echo "Boost symbols exported:"; grep 'boost::' <<<"$symbols" | head -20; fail=1
fi
# Public names are CamelCase classes or lower-case functions directly in lwload (or lwload::profile);
# a lower-case name followed by :: is a namespace, and only profile is a public one.
internal=$(grep -E '(^|for )lwload::[a-z_0-9]+::' <<<"$symbols" | grep -vE '(^|for )lwload::profile::' || true)
if [ -n "$internal" ]; then
  echo "internal lwload namespaces exported:"; head -20 <<<"$internal"; fail=1
fi
foreign=$(grep -vE '^(lwload_[a-z_]+$|lwload::|(typeinfo|typeinfo name|vtable) for lwload::)' <<<"$symbols" || true)
if [ -n "$foreign" ]; then
  echo "symbols outside the API exported:"; head -20 <<<"$foreign"; fail=1
fi
for wanted in 'lwload_load' 'lwload_version_number' 'lwload_manifest_open' 'lwload::load(' 'lwload::open_manifest(' 'typeinfo for lwload::Error'; do
  grep -qF "$wanted" <<<"$symbols" || { echo "missing export: $wanted"; fail=1; }
done
[ "$fail" = 0 ] && echo "$(wc -l <<<"$symbols") symbols exported, all of them API: $(grep -c '@@LWLOAD_1$' <<<"$versioned") C at LWLOAD_1, $(grep -c '@@LWLOAD_CXX_' <<<"$versioned") C++ at LWLOAD_CXX_0"
exit "$fail"
