#!/usr/bin/env bash
# A far node: one node's epoch of 1 MiB samples streamed straight over loopback
# and through strata-slow-link (a relay that holds each chunk --delay-ms each
# way, for kernels without netem), with the client's three receive windows:
#   by_round_trip  the default: a fixed 1 MiB window per call where Connect
#                  measures a round trip it moves 1 GB/s in, gRPC's own beyond
#   fixed          1 MiB whatever the round trip (--fixed-window)
#   grpc           gRPC's own window, grown with the measured bandwidth (--receive-window 0)
# Prints each one's median MB/s over --repeats turns, and the window the
# client chose. Usage: bench/far_link.sh [--samples 500] [--delays "0 1 2 5"] [--repeats 3]
# Needs a build in ./build. Writes bench/results/far_link.csv.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="$root/build"
samples=500
delays="0 1 2 5"
repeats=3
while [ $# -gt 0 ]; do
  case "$1" in
    --samples) samples="$2"; shift 2 ;;
    --delays) delays="$2"; shift 2 ;;
    --repeats) repeats="$2"; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "far_link.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
[[ "$repeats" =~ ^[1-9][0-9]*$ ]] || { echo "far_link.sh: --repeats must be a positive number" >&2; exit 2; }
for b in server/stratad client/strata bench/strata-stream-probe bench/strata-make-dataset bench/strata-slow-link; do
  [ -x "$bin/$b" ] || { echo "far_link.sh: no $bin/$b (build first: deploy/local/build.sh)" >&2; exit 1; }
done
work="$(mktemp -d /tmp/strata-far-link-XXXXXX)"
cluster="$root/deploy/local/cluster.sh"
link_pid=""
cleanup() {
  [ -n "$link_pid" ] && kill "$link_pid" 2>/dev/null || true
  "$cluster" stop --dir "$work/node" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$root/bench/results"
port=$((21000 + RANDOM % 9000))

echo "== data: $samples samples of 1 MiB on one node"
"$bin/bench/strata-make-dataset" --out "$work/data" --format tar --samples "$samples" --size 1MiB \
  --samples-per-tar 100 >/dev/null 2>&1
"$cluster" start --nodes 1 --base-port "$port" --dir "$work/node" >/dev/null
"$bin/client/strata" ingest -q --server "127.0.0.1:$port" --dataset big "$work/data"/*.tar >/dev/null

field() { tr ' ' '\n' | sed -n "s/^$1=//p"; }
runs="$work/runs.csv"
: >"$runs"
for delay in $delays; do
  address="127.0.0.1:$port"
  if [ "$delay" != 0 ]; then
    "$bin/bench/strata-slow-link" --target "127.0.0.1:$port" --delay-ms "$delay" >"$work/link" &
    link_pid=$!
    for _ in $(seq 50); do grep -q address= "$work/link" && break; sleep 0.1; done
    address=$(field address <"$work/link")
  fi
  modes=(by_round_trip fixed grpc)
  for rep in $(seq "$repeats"); do
    # Each turn starts with the next mode: none is always the first after a pause.
    for i in 0 1 2; do
      mode=${modes[$(((rep + i) % 3))]}
      case $mode in
        by_round_trip) extra=() ;;
        fixed) extra=(--fixed-window) ;;
        grpc) extra=(--receive-window 0) ;;
      esac
      out=$("$bin/bench/strata-stream-probe" --server "$address" --dataset big --world 1 --batch-size 8 \
        --stall-ms 60000 "${extra[@]}" 2>/dev/null)
      [ "$(echo "$out" | field exactly_once)" = yes ] || { echo "far_link.sh: not exactly once: $out" >&2; exit 1; }
      echo "$delay,$mode,$(echo "$out" | field mb_per_s),$(echo "$out" | field receive_window)" >>"$runs"
    done
  done
  if [ -n "$link_pid" ]; then kill "$link_pid"; wait "$link_pid" 2>/dev/null || true; link_pid=""; fi
  echo "  delay $delay ms each way: done"
done
/usr/bin/python3 - "$runs" "$root/bench/results/far_link.csv" "$samples" "$repeats" <<'PY'
import csv, statistics, sys
runs, out, samples, repeats = sys.argv[1:]
rows = list(csv.reader(open(runs)))
keys = list(dict.fromkeys((r[0], r[1]) for r in rows))
with open(out, "w") as f:
    f.write("delay_ms_each_way,window,mb_per_s_median,window_bytes_chosen,samples,repeats\n")
    print(f"{'delay each way':>15} {'window':>14} {'MB/s, median':>13} {'window chosen':>14}")
    for d, m in keys:
        sel = [r for r in rows if (r[0], r[1]) == (d, m)]
        med = statistics.median(float(r[2]) for r in sel)
        chosen = sel[-1][3]
        print(f"{d + ' ms':>15} {m:>14} {med:>13,.0f} {'gRPC' if chosen == '0' else chosen:>14}")
        f.write(f"{d},{m},{med:.0f},{chosen},{samples},{repeats}\n")
PY
