#!/usr/bin/env bash
# The Python client beside the C++ client, in one run: one stratad, one
# dataset of 1 KiB samples, batch 256; the C++ `strata stream` and the Python
# module (straight from the network, and through a host staging ring) each
# stream the epoch --repeats times (default 3), interleaved, and the best counts.
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
work="$(mktemp -d /tmp/strata-bench-py-XXXXXX)"
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$root/bench/results"

: >"$work/stratad.log"  # exists before the first look at it
"$bin/server/stratad" --listen 127.0.0.1:0 --metrics-listen "" --data-dir "$work/node" >"$work/stratad.log" 2>&1 &
pid=$!
server=""
for _ in $(seq 200); do
  server="$(sed -nE 's/.*ready: grpc=([^ ]+).*/\1/p' "$work/stratad.log" | head -1)"
  [ -n "$server" ] && break
  sleep 0.1
done
[ -n "$server" ] || { cat "$work/stratad.log" >&2; exit 1; }

echo "== $samples samples of 1 KiB, batch 256, stratad on $server; load: $(uptime | sed 's/.*load average/load average/')"
"$bin/bench/strata-make-dataset" --out "$work/data" --format tar --samples "$samples" --size 1KiB \
  --samples-per-tar 10000 >/dev/null
"$bin/client/strata" ingest --server "$server" --dataset py "$work/data"/*.tar >/dev/null 2>&1

rate() { grep -oE '[0-9,.]+ samples/s, [0-9,.]+ MB/s' | head -1 | sed -E 's/,//g; s/ samples\/s//; s/ MB\/s//'; }
best() {  # best() NAME: keeps the highest samples/s seen for NAME
  local name=$1 sps=$2 mbs=$3 var="best_$1"
  if /usr/bin/python3 -c "import sys; sys.exit(0 if $sps > ${!var:-0} else 1)"; then
    printf -v "$var" '%s' "$sps"; printf -v "mbs_$name" '%s' "$mbs"
  fi
}
for rep in $(seq "$repeats"); do
  read -r sps mbs <<<"$("$bin/client/strata" stream --server "$server" --dataset py --batch-size 256 --quiet | rate)"
  echo "run $rep: C++ strata stream         $sps samples/s  $mbs MB/s"; best cpp "$sps" "$mbs"
  read -r sps mbs <<<"$(/usr/bin/python3 "$root/bench/python_stream.py" --server "$server" --dataset py --batch-size 256 | rate)"
  echo "run $rep: Python, no staging        $sps samples/s  $mbs MB/s"; best py "$sps" "$mbs"
  read -r sps mbs <<<"$(/usr/bin/python3 "$root/bench/python_stream.py" --server "$server" --dataset py --batch-size 256 \
    --device cpu 2>/dev/null | rate)"
  echo "run $rep: Python, host staging ring $sps samples/s  $mbs MB/s"; best pystaged "$sps" "$mbs"
done

csv="$root/bench/results/python_client.csv"
ratio() { /usr/bin/python3 -c "print(f'{$1/$2:.2f}')"; }
{
  echo "client,samples_per_s,mb_per_s,ratio_to_cpp"
  echo "cpp_strata_stream,$best_cpp,$mbs_cpp,1.00"
  echo "python_no_staging,$best_py,$mbs_py,$(ratio "$best_py" "$best_cpp")"
  echo "python_host_staging,$best_pystaged,$mbs_pystaged,$(ratio "$best_pystaged" "$best_cpp")"
} >"$csv"
echo
column -s, -t "$csv"
