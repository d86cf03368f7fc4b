#!/usr/bin/env bash
# Installs the Debian packages strata needs (deploy/setup-debian.sh) and builds
# everything into ./build. Safe to run again: both steps are incremental.
set -euo pipefail
case "${1:-}" in -h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;; esac
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
bash deploy/setup-debian.sh
build_type="${STRATA_BUILD_TYPE:-RelWithDebInfo}"
source deploy/local/ccache.sh  # sets launcher
if [ ! -f build/build.ninja ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE="$build_type" -DSTRATA_WERROR=ON "${launcher[@]}"
fi
echo "build: compiling (the first build takes about 15 minutes on 2 cores; ccache makes later ones take a few)"
cmake --build build --parallel "$(nproc)"
