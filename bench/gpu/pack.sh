#!/bin/bash
# Packs what the GPU check (bench/gpu/run.sh) needs on a machine that has a
# GPU but none of strata's Debian libraries: the CUDA-enabled binaries from
# build/ (stripped), the Python module built for that machine's Python (and
# its wheel), and every shared library they use beyond glibc and libstdc++,
# into one .gpu/pack.tar.xz (ignored by git; about 22 MB).
#
#   bash bench/gpu/pack.sh [PYTHON]     # default: pyenv's 3.12, the GPU image's version
#
# Libraries a distribution usually has (zlib, OpenSSL, ICU, ...) go under
# libsys/; run.sh uses them only where the machine lacks that soname.
set -euo pipefail
case "${1:-}" in -h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;; esac
cd "$(dirname "$0")/../.."
PY=${1:-$HOME/.pyenv/versions/3.12.1/bin/python3}
[ -x build/bench/strata-staging-bench ] || { echo "build/ first: ./test.sh builds it" >&2; exit 1; }
grep -q '^CUDA_cudart_static_LIBRARY:FILEPATH=/' build/CMakeCache.txt && ! grep -q '^STRATA_WITH_CUDA:BOOL=OFF' build/CMakeCache.txt ||
  { echo "build/ was configured without the CUDA toolkit" >&2; exit 1; }
echo "Python module for $PY (build-gpu-py/)"
cmake -S . -B build-gpu-py -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
  -DSTRATA_PYTHON="$PY" >/dev/null
cmake --build build-gpu-py --target _strata | tail -1
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
mkdir -p "$T"/build/{server,client/python/strata,bench,tests/client} "$T"/lib "$T"/libsys
cp build/server/stratad "$T"/build/server/
cp build/client/strata build/client/strata-device-train-example "$T"/build/client/
cp build/bench/strata-make-dataset build/bench/strata-staging-bench "$T"/build/bench/
cp build/tests/client/cuda_staging_test build/tests/client/staging_test build/tests/client/parallel_copy_test "$T"/build/tests/client/
cp build-gpu-py/client/python/strata/*.so build-gpu-py/client/python/strata/*.py "$T"/build/client/python/strata/
mapfile -t objects < <(find "$T"/build -type f \( -perm -u+x -o -name '*.so' \))
strip --strip-debug "${objects[@]}"
# The wheel of that module, so tests/python/test_wheel.py installs it there
# into a fresh venv as a user would.
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' build-gpu-py/CMakeCache.txt)
"$PY" client/python/make_wheel.py --python "$PY" --module "$T"/build/client/python/strata/_strata*.so \
  --version "$version" --out "$T"/build/client/python/dist client/python/strata/*.py
sys='^(libz\.|libcrypto|libssl|libsystemd|libcap|libgcrypt|liblzma|libgpg-error|libbz2|liblz4|libzstd|libicu|libxml2)'
for f in "${objects[@]}"; do ldd "$f" | awk '/=> \//{print $3}'; done | sort -u | while read -r lib; do
  base=$(basename "$lib")
  case "$base" in libc.so*|libm.so*|libstdc++*|libgcc_s*|ld-linux*|libpthread*|libdl.so*|librt.so*) continue;; esac
  if [[ $base =~ $sys ]]; then cp -L "$lib" "$T"/libsys/; else cp -L "$lib" "$T"/lib/; fi
done
strip --strip-unneeded "$T"/lib/* "$T"/libsys/* 2>/dev/null || true
mkdir -p .gpu
echo "compressing (xz -9, about a minute)"
tar -C "$T" -cf - build lib libsys | xz -9 -T"$(nproc)" > .gpu/pack.tar.xz
ls -l .gpu/pack.tar.xz
