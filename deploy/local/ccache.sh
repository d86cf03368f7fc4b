# shellcheck shell=bash disable=SC2034  # `launcher` is used by the sourcing script
# Sourced by the scripts that configure a cmake build (deploy/local/build.sh,
# .ci/clang-check.sh, .ci/sanitize.sh, bench/fuzz.sh): sets the array
# `launcher` to the flags that compile through ccache when it is installed
# (rebuilds and other checkouts then reuse objects), else to nothing.
# Pass it on as "${launcher[@]}".
launcher=()
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
