#!/usr/bin/env bash
# Runs every libFuzzer target (fuzz/) for SECONDS each, one after another, and
# prints the executions and findings of each. Builds them first with clang 14,
# ASan and UBSan into ./build-fuzz (-DSTRATA_FUZZ=ON; incremental). Each run
# starts from the checked-in corpus (fuzz/corpus/<target>/) plus what earlier
# runs found (build-fuzz/corpus/<target>/); a finding (crash, leak, timeout,
# out of memory) is written to build-fuzz/findings/<target>/: fix it, then
# copy the file into fuzz/corpus/<target>/ so the replay test keeps it.
# Usage: bench/fuzz.sh [SECONDS] [TARGET...]   (default 60 s, every target)
set -euo pipefail
case "${1:-}" in -h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;; esac
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
seconds="${1:-60}"
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=($(ls fuzz/corpus))
fi
if ! command -v clang++-14 >/dev/null 2>&1; then bash deploy/setup-debian.sh; fi
source deploy/local/ccache.sh  # sets launcher
if [ ! -f build-fuzz/build.ninja ]; then
  cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 -DSTRATA_FUZZ=ON \
    -DSTRATA_WITH_PYTHON=OFF -DSTRATA_WITH_CUDA=OFF "${launcher[@]}" >/dev/null
fi
cmake --build build-fuzz --parallel "$(nproc)" --target $(printf '%s_fuzzer ' "${targets[@]}")

printf '%-16s %8s %12s %10s %8s %9s\n' target seconds executions exec/s corpus findings
status=0
for t in "${targets[@]}"; do
  corpus="build-fuzz/corpus/$t"
  findings="build-fuzz/findings/$t"
  mkdir -p "$corpus" "$findings"
  log="build-fuzz/findings/$t.log"
  before=$(ls "$findings" | wc -l)
  # -rss_limit_mb and -malloc_limit_mb: an input that makes a parser allocate
  # gigabytes is a finding too (a peer could send it).
  "build-fuzz/fuzz/${t}_fuzzer" -max_total_time="$seconds" -print_final_stats=1 \
    -rss_limit_mb=2048 -malloc_limit_mb=1024 -timeout=10 -artifact_prefix="$findings/" \
    "$corpus" "fuzz/corpus/$t" >"$log" 2>&1 || status=1
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  size=$(ls "$corpus" | wc -l)
  found=$(( $(ls "$findings" | wc -l) - before ))
  printf '%-16s %8s %12s %10s %8s %9s\n' "$t" "$seconds" "${runs:-?}" "${rate:-?}" "$size" "$found"
  if [ "$found" -gt 0 ]; then
    grep -m3 -E 'ERROR: |SUMMARY: |fuzz property failed' "$log" | sed 's/^/    /' || true
  fi
done
exit $status
