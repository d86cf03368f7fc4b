#!/usr/bin/env bash
# CI: a second build with clang 14 and its thread-safety analysis on
# (-Wthread-safety, findings are errors; see common/thread_annotations.h), in
# ./build-clang. Builds the libraries, stratad and the strata CLI; fails on a
# finding or on anything else clang rejects. Incremental, like build.sh.
# Each source compiles on its own here (-DSTRATA_UNITY_BUILD=OFF), so a source
# that compiles only because an earlier one in its unity batch included
# what it needs fails here.
# A quick local check: CI gets the same analysis from its TSan build
# (.ci/sanitize.sh tsan), which is clang's with STRATA_THREAD_SAFETY on.
# Usage: .ci/clang-check.sh [more targets] [-- ninja options, e.g. -k 0]
set -euo pipefail
case "${1:-}" in -h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;; esac
cd "$(dirname "$0")/.."
if ! command -v clang++-14 >/dev/null 2>&1; then bash deploy/setup-debian.sh; fi
source deploy/local/ccache.sh  # sets launcher
if [ ! -f build-clang/build.ninja ]; then
  cmake -S . -B build-clang -G Ninja -DCMAKE_BUILD_TYPE=Debug \
    -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
    -DSTRATA_THREAD_SAFETY=ON -DSTRATA_WERROR=ON -DSTRATA_WITH_PYTHON=OFF -DSTRATA_UNITY_BUILD=OFF "${launcher[@]}"
fi
start=$(date +%s)
cmake --build build-clang --parallel "$(nproc)" --target strata_common strata_server strata_client strata_ingest \
  strata_cli_lib stratad strata "$@"
echo "clang-check: clang 14 build with -Wthread-safety clean in $(( $(date +%s) - start ))s"
