#!/usr/bin/env bash
# Keeps the C++ tree formatted as .clang-format says: every .cc, .h and .cu
# file that git tracks (or, outside a git checkout, every such file under the
# source folders) must come out of clang-format 14 unchanged.
#
# Usage: tests/format_test.sh [REPO_ROOT]   (default: the folder above this script)
# Prints each file that would change, with the first differences, and exits 1
# if there is one. To fix: clang-format-14 -i FILE (or every file, as below).
set -u -o pipefail

root=$(cd "${1:-$(dirname "$0")/..}" && pwd -P) || exit 2
cd "$root" || exit 2
format=$(command -v clang-format-14 || true)
if [ -z "$format" ]; then
  echo "format_test: clang-format-14 not found (deploy/setup-debian.sh installs it)" >&2
  exit 1
fi

if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files -- '*.cc' '*.h' '*.cu')
else
  mapfile -t files < <(find bench client common fuzz plan proto server tests -type f \
                         \( -name '*.cc' -o -name '*.h' -o -name '*.cu' \) | sort)
fi

bad=0
for f in "${files[@]}"; do
  [ -f "$f" ] || continue
  if ! "$format" --style=file "$f" | cmp -s - "$f"; then
    echo "format_test: $f is not formatted; clang-format-14 -i $f would change:" >&2
    "$format" --style=file "$f" | diff "$f" - | head -10 >&2
    bad=$((bad + 1))
  fi
done
if [ "$bad" -gt 0 ]; then
  echo "format_test: $bad of ${#files[@]} files need clang-format-14 -i" >&2
  exit 1
fi
echo "format_test: ${#files[@]} files formatted"
