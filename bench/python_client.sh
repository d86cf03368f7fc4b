#!/usr/bin/env bash
# The Python client beside the C++ client, in one run: one stratad, one
# dataset of 1 KiB samples, batch 256; the C++ `strata stream` and the Python
# module (straight from the network, and through a host staging ring) each
# stream the epoch --repeats times (default 3), interleaved; best and median count.
# With 2 or more CPUs, stratad is pinned to CPU 0 and each client to CPU 1
# (--no-pin: neither), so that the clients compete with the server for no
# core and the ratio measures the clients: unpinned on 2 cores, the scheduler's
# placement moves a run's rate by 10% either way.
# Usage: bench/python_client.sh [--build DIR] [--samples N] [--repeats R] [--no-pin]
# Needs a build (default ./build). Writes bench/results/python_client.csv.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="$root/build"
samples=200000
repeats=3
pin=1
while [ $# -gt 0 ]; do
  case "$1" in
    --build) bin="$(cd "$2" && pwd)"; shift 2 ;;
    --samples) samples="$2"; shift 2 ;;
    --repeats) repeats="$2"; shift 2 ;;
    --no-pin) pin=0; shift ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
export PYTHONPATH="$bin/client/python"
# shellcheck source=bench/lib/cluster.sh
source "$root/bench/lib/cluster.sh"
bench_work strata-bench-py
mkdir -p "$root/bench/results"
bench_stratad node
client_cpu=()  # the command prefix that places a client
placement="unpinned"
if [ "$pin" = 1 ] && [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then
  taskset -a -pc 0 "${bench_pids[-1]}" >/dev/null
  client_cpu=(taskset -c 1)
  placement="stratad on CPU 0, clients on CPU 1"
fi

echo "== $samples samples of 1 KiB, batch 256, stratad on $server ($placement); load: $(uptime | sed 's/.*load average/load average/')"
"$bin/bench/strata-make-dataset" --out "$work/data" --format tar --samples "$samples" --size 1KiB \
  --samples-per-tar 10000 >/dev/null
"$bin/client/strata" ingest --server "$server" --dataset py "$work/data"/*.tar >/dev/null 2>&1

rate() { grep -oE '[0-9,.]+ samples/s, [0-9,.]+ MB/s' | head -1 | sed -E 's/,//g; s/ samples\/s//; s/ MB\/s//'; }
runs="$work/runs.csv"  # client,samples_per_s,mb_per_s: one row per run
: >"$runs"
for rep in $(seq "$repeats"); do
  read -r sps mbs <<<"$("${client_cpu[@]}" "$bin/client/strata" stream --server "$server" --dataset py --batch-size 256 --quiet | rate)"
  echo "run $rep: C++ strata stream         $sps samples/s  $mbs MB/s"; echo "cpp_strata_stream,$sps,$mbs" >>"$runs"
  read -r sps mbs <<<"$("${client_cpu[@]}" /usr/bin/python3 "$root/bench/python_stream.py" --server "$server" --dataset py --batch-size 256 | rate)"
  echo "run $rep: Python, no staging        $sps samples/s  $mbs MB/s"; echo "python_no_staging,$sps,$mbs" >>"$runs"
  read -r sps mbs <<<"$("${client_cpu[@]}" /usr/bin/python3 "$root/bench/python_stream.py" --server "$server" --dataset py --batch-size 256 \
    --device cpu 2>/dev/null | rate)"
  echo "run $rep: Python, host staging ring $sps samples/s  $mbs MB/s"; echo "python_host_staging,$sps,$mbs" >>"$runs"
done

# Best and median of the runs, and the median of each repeat's ratio to the
# C++ run just before it (a pair shares the machine's state of the moment).
csv="$root/bench/results/python_client.csv"
/usr/bin/python3 - "$runs" >"$csv" <<'PY'
import csv, statistics, sys
runs, paired, cpp = {}, {}, None
for client, sps, mbs in csv.reader(open(sys.argv[1])):
    runs.setdefault(client, []).append((float(sps), float(mbs)))
    if client == "cpp_strata_stream":
        cpp = float(sps)
    paired.setdefault(client, []).append(float(sps) / cpp)
best = {c: max(r) for c, r in runs.items()}
median = {c: statistics.median(s for s, _ in r) for c, r in runs.items()}
print("client,best_samples_per_s,best_mb_per_s,best_ratio_to_cpp,median_samples_per_s,median_ratio_to_cpp,"
      "median_paired_ratio")
for c, r in runs.items():
    print(f"{c},{best[c][0]:.0f},{best[c][1]:.1f},{best[c][0] / best['cpp_strata_stream'][0]:.2f},"
          f"{median[c]:.0f},{median[c] / median['cpp_strata_stream']:.2f},{statistics.median(paired[c]):.2f}")
PY
echo "== load after: $(uptime | sed 's/.*load average/load average/')"
echo
column -s, -t "$csv"
