#!/usr/bin/env bash
# check: every C and C++ source is laid out as .clang-format says (clang-format-14; CI runs it).
# Lists the files that differ and fails; `clang-format-14 -i FILE...` formats them. Includes are
# never sorted (.clang-format: SortIncludes Never): each header includes its layer guard first.
set -euo pipefail
cd "$(dirname "$0")/../.."
folders=(lib include backends adapters tools tests fuzz examples)
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -d '' files < <(git ls-files -z -- "${folders[@]}" | grep -z -E '\.(c|h|cpp|hpp)$')
else
  mapfile -d '' files < <(find "${folders[@]}" -type f -regex '.*\.\(c\|h\|cpp\|hpp\)' -print0 | sort -z)
fi
status=0
report=$(clang-format-14 --dry-run --Werror "${files[@]}" 2>&1) || status=$?
if [ "$status" -ne 0 ]; then
  differ=$(printf '%s\n' "$report" | sed -n 's/^\(.*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/\1/p' | uniq)
  if [ -z "$differ" ]; then printf '%s\n' "$report" >&2; exit "$status"; fi
  echo "format: $(printf '%s\n' "$differ" | wc -l) of ${#files[@]} files differ from .clang-format:" >&2
  printf '  %s\n' $differ >&2
  exit 1
fi
echo "format: ${#files[@]} files as .clang-format says"
