#!/usr/bin/env bash
# check: nothing in the repository reads a folder beside the checkout (the self_contained test).
# The repository is self-contained: nothing it builds, tests or documents reads a folder beside the
# checkout. Fails (listing the lines) when a path to a sibling `shared` folder comes back.
# Usage: self-contained.sh [SOURCE_ROOT]
set -euo pipefail
root=${1:-$(dirname "$0")/../..}
cd "$root"
pattern='\.\./shared|/work/shared'
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  hits=$(git grep -nE "$pattern" -- . ':!scripts/check/self-contained.sh' || true)
else
  hits=$(grep -rnE "$pattern" --exclude=self-contained.sh --exclude-dir=build . || true)
fi
if [ -n "$hits" ]; then
  echo "these lines refer to a folder outside the repository:"
  echo "$hits"
  exit 1
fi
echo "self-contained: no reference to a folder beside the checkout"
