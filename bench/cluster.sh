#!/usr/bin/env bash
# Cluster figures, measured in one run on loopback:
#   1. streaming throughput from 1 node and from 3 nodes (same data, same client);
#   2. the failover pause a trainer sees: median and worst of N kill -9s mid-epoch;
#   3. re-replication MB/s after a node is gone past its grace period.
# Usage: bench/cluster.sh [--samples N] [--kills N] [--repair-mb N]
# Needs a build in ./build. Writes bench/results/cluster.csv.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="$root/build"
samples=200000   # 1 KiB samples for the throughput and failover runs
kills=10
repair_mb=512    # data to re-replicate (1 MiB samples)
while [ $# -gt 0 ]; do
  case "$1" in
    --samples) samples="$2"; shift 2 ;;
    --kills) kills="$2"; shift 2 ;;
    --repair-mb) repair_mb="$2"; shift 2 ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
work="$(mktemp -d /tmp/strata-cluster-bench-XXXXXX)"
cluster="$root/deploy/local/cluster.sh"
cleanup() {
  for d in one three repair; do "$cluster" stop --dir "$work/$d" >/dev/null 2>&1 || true; done
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$root/bench/results"
csv="$root/bench/results/cluster.csv"
echo "measure,value,unit,detail" >"$csv"
base=$((21000 + RANDOM % 10000))
strata="$bin/client/strata"
probe="$bin/bench/strata-stream-probe"
field() { grep -o "$1=[^ ]*" | cut -d= -f2; }

echo "== data: $samples samples of 1 KiB"
"$bin/bench/strata-make-dataset" --out "$work/small" --format tar --samples "$samples" --size 1KiB \
  --samples-per-tar 20000 >/dev/null

echo "== 1. streaming from 1 node and from 3 nodes (2 ranks, batch 256, best of 3)"
printf 'cluster:\n  repair_interval_ms: 500\n' >"$work/fast.yaml"
"$cluster" start --nodes 1 --base-port "$base" --dir "$work/one" >/dev/null
"$cluster" start --nodes 3 --base-port $((base + 10)) --dir "$work/three" -- --config "$work/fast.yaml" >/dev/null
"$strata" ingest -q --server 127.0.0.1:$base --dataset small "$work/small"/*.tar >/dev/null
"$strata" ingest -q --server 127.0.0.1:$((base + 10)) --dataset small --replication 2 "$work/small"/*.tar >/dev/null
best() {  # best samples/s of three runs against $1
  local b=0 out sps
  for _ in 1 2 3; do
    out=$("$probe" --server "$1" --dataset small --world 2 --batch-size 256)
    sps=$(echo "$out" | field samples_per_s)
    [ "$(echo "$out" | field exactly_once)" = yes ] || { echo "not exactly once: $out" >&2; exit 1; }
    [ "$sps" -gt "$b" ] && b=$sps
  done
  echo "$b"
}
one=$(best 127.0.0.1:$base)
three=$(best "127.0.0.1:$((base + 10)),127.0.0.1:$((base + 11)),127.0.0.1:$((base + 12))")
ratio=$(/usr/bin/python3 -c "print(f'{$three/$one:.2f}')")
echo "1 node: $one samples/s; 3 nodes: $three samples/s (x$ratio)"
echo "stream_1_node,$one,samples/s,2 ranks batch 256 1KiB" >>"$csv"
echo "stream_3_nodes,$three,samples/s,2 ranks batch 256 1KiB R=2" >>"$csv"
"$cluster" stop --dir "$work/one" >/dev/null

echo "== 2. failover pause: $kills times kill -9 of one node half-way through an epoch"
steps=$((samples / 512))
pauses=()
for i in $(seq 1 "$kills"); do
  victim=$(( (i % 3) + 1 ))
  out=$("$probe" --server "127.0.0.1:$((base + 10)),127.0.0.1:$((base + 11)),127.0.0.1:$((base + 12))" \
    --dataset small --world 2 --batch-size 256 --epoch "$i" --stall-ms 1000 \
    --kill-pid "$(cat "$work/three/node-$victim.pid")" --kill-at-step $((steps / 2)))
  [ "$(echo "$out" | field exactly_once)" = yes ] || { echo "not exactly once after a kill: $out" >&2; exit 1; }
  pause=$(echo "$out" | field failover_pause_ms)
  pauses+=("$pause")
  echo "  kill $i (node-$victim): pause ${pause} ms, every sample once"
  "$cluster" restart --node "$victim" --dir "$work/three" >/dev/null
  sleep 1.5  # the others see it up again
done
read -r median worst <<<"$(printf '%s\n' "${pauses[@]}" | /usr/bin/python3 -c \
  'import sys,statistics; v=[float(x) for x in sys.stdin]; print(f"{statistics.median(v):.1f} {max(v):.1f}")')"
echo "failover pause: median $median ms, worst $worst ms"
echo "failover_pause_median,$median,ms,$kills kills; client stall timeout 1000 ms" >>"$csv"
echo "failover_pause_worst,$worst,ms,$kills kills" >>"$csv"
"$cluster" stop --dir "$work/three" >/dev/null

echo "== 3. re-replication: ${repair_mb} MiB at R=2 on 3 nodes; node-3 killed and gone past a 2 s grace period"
"$bin/bench/strata-make-dataset" --out "$work/large" --format tar --samples "$repair_mb" --size 1MiB \
  --samples-per-tar 64 >/dev/null
printf 'cluster:\n  grace_period_s: 2\n  failure_timeout_ms: 1000\n  repair_interval_ms: 200\n  repair_bytes_per_sec: 4GiB\n' \
  >"$work/repair.yaml"
"$cluster" start --nodes 3 --base-port $((base + 20)) --dir "$work/repair" -- --config "$work/repair.yaml" >/dev/null
"$strata" ingest -q --server 127.0.0.1:$((base + 20)) --dataset large --replication 2 --shard-size 16MiB \
  "$work/large"/*.tar >/dev/null
sleep 3  # extra coordinator copies released
kill -9 "$(cat "$work/repair/node-3.pid")"
copied() {
  "$strata" status --json --server "127.0.0.1:$((base + 20)),127.0.0.1:$((base + 21))" | /usr/bin/python3 -c '
import json,sys
s=json.load(sys.stdin)
total=sum(int((n or {}).get("repair",{}).get("bytes_copied",0)) for n in s["nodes"])
h=s["datasets"][0]
print(total, int(h["healthy"])==int(h["shards"]))'
}
first=""; last=""; bytes=0
for _ in $(seq 600); do
  read -r b healthy <<<"$(copied)"
  now=$(date +%s.%N)
  if [ "$b" -gt 0 ] && [ -z "$first" ]; then first=$now; fi
  if [ "$b" -gt "$bytes" ]; then bytes=$b; last=$now; fi
  [ "$healthy" = True ] && [ "$b" -gt 0 ] && break
  sleep 0.1
done
mbs=$(/usr/bin/python3 -c "print(f'{$bytes/1e6/max($last-$first,0.1):.1f}')")
echo "re-replicated $((bytes / 1048576)) MiB at $mbs MB/s (first to last copy observed)"
echo "rereplication_mb_per_s,$mbs,MB/s,$((bytes / 1048576)) MiB copied; polling at 100 ms" >>"$csv"
echo
column -s, -t "$csv"
