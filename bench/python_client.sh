#!/usr/bin/env bash
# The Python client beside the C++ client, in one run: one stratad, one
# dataset of 1 KiB samples, batch 256; the C++ `strata stream` and the Python
# module (straight from the network, and through a host staging ring) each
# stream the epoch --repeats times (default 3), interleaved; best and median count.
# Usage: bench/python_client.sh [--build DIR] [--samples N] [--repeats R]
# Needs a build (default ./build). Writes bench/results/python_client.csv.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="$root/build"
samples=200000
repeats=3
while [ $# -gt 0 ]; do
  case "$1" in
    --build) bin="$(cd "$2" && pwd)"; shift 2 ;;
    --samples) samples="$2"; shift 2 ;;
    --repeats) repeats="$2"; shift 2 ;;
    -h|--help) sed -n '2,7p' "$0"; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
export PYTHONPATH="$bin/client/python"
# shellcheck source=bench/lib/cluster.sh
source "$root/bench/lib/cluster.sh"
bench_work strata-bench-py
mkdir -p "$root/bench/results"
bench_stratad node

echo "== $samples samples of 1 KiB, batch 256, stratad on $server; load: $(uptime | sed 's/.*load average/load average/')"
"$bin/bench/strata-make-dataset" --out "$work/data" --format tar --samples "$samples" --size 1KiB \
  --samples-per-tar 10000 >/dev/null
"$bin/client/strata" ingest --server "$server" --dataset py "$work/data"/*.tar >/dev/null 2>&1

rate() { grep -oE '[0-9,.]+ samples/s, [0-9,.]+ MB/s' | head -1 | sed -E 's/,//g; s/ samples\/s//; s/ MB\/s//'; }
runs="$work/runs.csv"  # client,samples_per_s,mb_per_s: one row per run
: >"$runs"
for rep in $(seq "$repeats"); do
  read -r sps mbs <<<"$("$bin/client/strata" stream --server "$server" --dataset py --batch-size 256 --quiet | rate)"
  echo "run $rep: C++ strata stream         $sps samples/s  $mbs MB/s"; echo "cpp_strata_stream,$sps,$mbs" >>"$runs"
  read -r sps mbs <<<"$(/usr/bin/python3 "$root/bench/python_stream.py" --server "$server" --dataset py --batch-size 256 | rate)"
  echo "run $rep: Python, no staging        $sps samples/s  $mbs MB/s"; echo "python_no_staging,$sps,$mbs" >>"$runs"
  read -r sps mbs <<<"$(/usr/bin/python3 "$root/bench/python_stream.py" --server "$server" --dataset py --batch-size 256 \
    --device cpu 2>/dev/null | rate)"
  echo "run $rep: Python, host staging ring $sps samples/s  $mbs MB/s"; echo "python_host_staging,$sps,$mbs" >>"$runs"
done

# Best and median of the runs; on a shared machine the median is the steadier figure.
csv="$root/bench/results/python_client.csv"
/usr/bin/python3 - "$runs" >"$csv" <<'PY'
import csv, statistics, sys
runs = {}
for client, sps, mbs in csv.reader(open(sys.argv[1])):
    runs.setdefault(client, []).append((float(sps), float(mbs)))
best = {c: max(r) for c, r in runs.items()}
median = {c: statistics.median(s for s, _ in r) for c, r in runs.items()}
print("client,best_samples_per_s,best_mb_per_s,best_ratio_to_cpp,median_samples_per_s,median_ratio_to_cpp")
for c, r in runs.items():
    print(f"{c},{best[c][0]:.0f},{best[c][1]:.1f},{best[c][0] / best['cpp_strata_stream'][0]:.2f},"
          f"{median[c]:.0f},{median[c] / median['cpp_strata_stream']:.2f}")
PY
echo "== load after: $(uptime | sed 's/.*load average/load average/')"
echo
column -s, -t "$csv"
