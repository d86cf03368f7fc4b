#!/bin/bash
# strata's CUDA path on a real GPU, on a machine with none of strata's
# libraries: unpacks .gpu/pack.tar.xz (bench/gpu/pack.sh), then runs the CUDA
# tests, strata-staging-bench at four batch sizes (each ring with one copy
# thread and with the automatic count; 64 MiB with 8 too), a Python device="cuda"
# stream against a live stratad (bench/gpu/cuda_stream.py) and the Python
# tests, the wheel's among them (installed into a fresh venv of that machine's
# python3). Run from the repository root; writes everything to $OUT/log (or
# ./gpu.log). Needs python3 with torch (CUDA) and pytest; about 3 minutes on
# an H200 machine (bench/results/gpu_h200_3b8c7de.log).
#
#   bash bench/gpu/run.sh [tests] [bench] [python] [pytest]   # default: all four
set -u
case "${1:-}" in -h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;; esac
R=$PWD
SECTIONS=" ${*:-tests bench python pytest} "
want() { [[ $SECTIONS == *" $1 "* ]]; }
LOG=${OUT:+$OUT/log}; exec > >(tee "${LOG:-gpu.log}") 2>&1
echo "== machine"; nvidia-smi --query-gpu=name,memory.total,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv
nproc; python3 --version; python3 -c 'import torch, numpy; print("torch", torch.__version__, "numpy", numpy.__version__, torch.cuda.is_available())'
W=/tmp/sg; mkdir -p $W
python3 -c "import tarfile; tarfile.open('$R/.gpu/pack.tar.xz').extractall('$W')"
for f in $W/libsys/*; do n=$(basename $f); ldconfig -p | grep -qP "^\t\Q$n\E " || { cp $f $W/lib/; echo "carried $n"; }; done
export LD_LIBRARY_PATH=$W/lib STRATA_BUILD_DIR=$W/build PYTHONPATH=$W/build/client/python PYTHONUNBUFFERED=1
export STRATA_WHEEL_DIR=$W/build/client/python/dist STRATA_WHEEL_PYTHON=$(command -v python3)
B=$W/build
for b in $B/server/stratad $B/client/* $B/bench/* $B/tests/client/* $B/client/python/strata/*.so; do [ -f $b ] || continue; ldd $b | grep 'not found' | sed "s|^|$b: |"; done
if want tests; then
  echo "== cuda_staging_test"; timeout 120 $B/tests/client/cuda_staging_test 2>&1 | tail -80
  echo "== staging_test"; timeout 60 $B/tests/client/staging_test --gtest_brief=1 2>&1 | tail -15
  echo "== parallel_copy_test"; timeout 60 $B/tests/client/parallel_copy_test --gtest_brief=1 2>&1 | tail -15
fi
if want bench; then
  echo "== staging bench (default)"; timeout 90 $B/bench/strata-staging-bench
  for sz in 1048576 8388608 268435456; do echo "== staging bench $sz"; timeout 60 $B/bench/strata-staging-bench --batch-bytes $sz --batches 40; done
  echo "== staging bench, 8 copy threads"; timeout 60 $B/bench/strata-staging-bench --copy-threads 8
fi
if want python; then echo "== python cuda stream"; timeout 150 python3 bench/gpu/cuda_stream.py; fi
if want pytest; then
  echo "== pytest tests/python"
  timeout 180 python3 -m pytest -q -p no:cacheprovider --timeout 90 -rs tests/python 2>&1 | tail -40
fi
echo "== done"
