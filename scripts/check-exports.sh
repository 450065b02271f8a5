#!/usr/bin/env bash
# liblwload exports its API and nothing else: the C API (lwload_*) and the public C++ API
# (namespace lwload, lwload::profile, their type infos and vtables) — no Boost symbol, no internal
# lwload namespace (formats, load, io, opencl, ze, vk, cuda, ...), no third-party template.
#   check-exports.sh build/liblwload.so
set -euo pipefail
lib=${1:?usage: check-exports.sh LIBRARY}
symbols=$(nm -DC --defined-only "$lib" | cut -d' ' -f3-)
fail=0
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
for wanted in 'lwload_load' 'lwload_manifest_open' 'lwload::load(' 'lwload::open_manifest(' 'typeinfo for lwload::Error'; do
  grep -qF "$wanted" <<<"$symbols" || { echo "missing export: $wanted"; fail=1; }
done
[ "$fail" = 0 ] && echo "$(wc -l <<<"$symbols") symbols exported, all of them API"
exit "$fail"
