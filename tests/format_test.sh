#!/usr/bin/env bash
# The tree is formatted as .clang-format says: every C++ and CUDA file git
# tracks (*.cc, *.h, *.cu) is unchanged by clang-format-14. Lists the files
# that are not, with the command that fixes them, and exits 1; 0 otherwise.
# Usage: tests/format_test.sh [REPO_ROOT]   (default: the folder above this script)
set -u -o pipefail

root=$(cd "${1:-$(dirname "$0")/..}" && pwd -P) || exit 2
cd "$root" || exit 2
if ! command -v clang-format-14 >/dev/null 2>&1; then
  echo "format_test: clang-format-14 is missing (bash deploy/setup-debian.sh installs it)" >&2
  exit 1
fi
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  echo "format_test: $root is not a git checkout; the files to check are the ones git tracks" >&2
  exit 1
fi

mapfile -t files < <(git ls-files '*.cc' '*.h' '*.cu')
if [ ${#files[@]} -eq 0 ]; then
  echo "format_test: git tracks no C++ files under $root" >&2
  exit 1
fi
# One clang-format run for every file (--dry-run -Werror reports each change it
# would make as "FILE:LINE:COL: error: ..."): starting clang-format once per
# file made this test take over a minute.
existing=()
for f in "${files[@]}"; do
  [ -f "$f" ] && existing+=("$f")  # a file deleted in the working tree, not yet in the index, is skipped
done
report=$(clang-format-14 --style=file --dry-run -Werror "${existing[@]}" 2>&1)
rc=$?
mapfile -t bad < <(printf '%s\n' "$report" | sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/\1/p' | sort -u)
if [ $rc -ne 0 ] && [ ${#bad[@]} -eq 0 ]; then
  echo "format_test: clang-format-14 failed:" >&2
  printf '%s\n' "$report" | head -20 >&2
  exit 1
fi
if [ ${#bad[@]} -gt 0 ]; then
  printf 'format_test: not formatted: %s\n' "${bad[@]}" >&2
  echo "format_test: fix with: clang-format-14 -i ${bad[*]}" >&2
  exit 1
fi
echo "format_test: ${#files[@]} files formatted as .clang-format says"
