#!/usr/bin/env bash
# Installs the Debian packages strata needs (deploy/setup-debian.sh) and builds
# everything into ./build. Safe to run again: both steps are incremental.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
bash deploy/setup-debian.sh
build_type="${STRATA_BUILD_TYPE:-RelWithDebInfo}"
launcher=()
if command -v ccache >/dev/null 2>&1; then  # rebuilds and other checkouts reuse objects
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
if [ ! -f build/build.ninja ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE="$build_type" -DSTRATA_WERROR=ON "${launcher[@]}"
fi
echo "build: compiling (a clean build takes about 4 minutes on 2 cores)"
cmake --build build --parallel "$(nproc)"
