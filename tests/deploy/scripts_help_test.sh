#!/usr/bin/env bash
# Every shell script a user or CI runs answers --help: it prints its header
# (what it does, how to call it) and exits 0 at once, doing nothing else.
# A script that does not mention --help fails the test without being run,
# since it would do its work instead (install packages, build, benchmark).
# Sourced helpers (bench/lib/, deploy/local/ccache.sh) and the tests are
# exempt. Usage: scripts_help_test.sh SOURCE_DIR
set -euo pipefail
src="$1"
cd "$src"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
failed=0 checked=0
while read -r script; do
  case "$script" in tests/* | bench/lib/* | deploy/local/ccache.sh) continue ;; esac
  checked=$((checked + 1))
  if ! grep -q -- '--help' "$script"; then
    echo "FAIL $script: does not answer --help"; failed=1; continue
  fi
  # From another folder: the script must find its own way, and must print
  # its help without starting anything.
  if ! (cd "$work" && timeout 20 bash "$src/$script" --help >"$work/out" 2>&1); then
    echo "FAIL $script --help: exit status not 0:"; sed 's/^/  /' "$work/out"; failed=1; continue
  fi
  if [ "$(grep -c . "$work/out")" -lt 2 ]; then
    echo "FAIL $script --help: printed less than two lines:"; sed 's/^/  /' "$work/out"; failed=1; continue
  fi
  echo "ok   $script"
done < <(if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then git ls-files '*.sh'
         else find . -name '*.sh' -not -path './build*' -not -path './.*' | sed 's|^\./||' | sort; fi)
[ "$checked" -gt 10 ] || { echo "FAIL: only $checked scripts found in $src"; exit 1; }
exit "$failed"
