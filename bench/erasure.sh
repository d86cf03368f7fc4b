#!/usr/bin/env bash
# Erasure coding against replication, in one run on 6 loopback nodes, the same data:
#   1. disk used by --redundancy ec:4+2 against --replication 3 (every node's files for the
#      dataset, once the ingesting node's hand-off copies are released; target <= 0.55x);
#   2. healthy streaming throughput, ec against replicas (best of 3; target >= 0.95x);
#   3. degraded throughput with one node stopped (kill -9), ec against replicas: the first
#      reads of each lost shard wait for its rebuild from 4 others.
# Usage: bench/erasure.sh [--samples N] [--size SIZE] [--shard-size SIZE]
# Needs a build in ./build. Writes bench/results/erasure.csv.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="$root/build"
samples=20000
size=8KiB
shard=4MiB
while [ $# -gt 0 ]; do
  case "$1" in
    --samples) samples="$2"; shift 2 ;;
    --size) size="$2"; shift 2 ;;
    --shard-size) shard="$2"; shift 2 ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
work="$(mktemp -d /tmp/strata-ec-bench-XXXXXX)"
cluster="$root/deploy/local/cluster.sh"
cleanup() { "$cluster" stop --dir "$work/six" >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
mkdir -p "$root/bench/results"
base=$((22000 + RANDOM % 10000))
strata="$bin/client/strata"
probe="$bin/bench/strata-stream-probe"
servers=$(for i in 0 1 2 3 4 5; do printf '127.0.0.1:%d,' $((base + i)); done | sed 's/,$//')
field() { grep -o "$1=[^ ]*" | cut -d= -f2; }

echo "== data: $samples samples of $size, shards of $shard"
"$bin/bench/strata-make-dataset" --out "$work/data" --format tar --samples "$samples" --size "$size" \
  --samples-per-tar 5000 >/dev/null
printf 'cluster:\n  repair_interval_ms: 300\n' >"$work/fast.yaml"
"$cluster" start --nodes 6 --base-port "$base" --dir "$work/six" -- --config "$work/fast.yaml" >/dev/null
"$strata" ingest -q --server "127.0.0.1:$base" --dataset rep --replication 3 --shard-size "$shard" "$work/data"/*.tar >/dev/null
"$strata" ingest -q --server "127.0.0.1:$base" --dataset ec --redundancy ec:4+2 --shard-size "$shard" "$work/data"/*.tar >/dev/null

files() {  # files with extension $2 of dataset $1 over every node
  find "$work/six"/node-*/shards/"$1" -name "*.$2" 2>/dev/null | wc -l
}
bytes() { find "$work/six"/node-*/shards/"$1" -type f \( -name '*.shard' -o -name '*.parity' \) -printf '%s\n' | awk '{s+=$1} END {print s}'; }
shards() { "$strata" describe --server "127.0.0.1:$base" "$1" --json | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["dataset"]["shards"])'; }
rs=$(shards rep); es=$(shards ec)
for _ in $(seq 300); do  # hand-off copies on the ingesting node are released once every holder has its file
  [ "$(files rep shard)" -eq $((3 * rs)) ] && [ "$(files ec shard)" -eq "$es" ] &&
    [ "$(files ec parity)" -eq $((2 * ((es + 3) / 4))) ] && break
  sleep 0.2
done
rep_bytes=$(bytes rep); ec_bytes=$(bytes ec)
disk=$(/usr/bin/python3 -c "print(f'{$ec_bytes/$rep_bytes:.3f}')")
echo "1. disk: replication 3 $rep_bytes bytes ($rs shards x3), ec:4+2 $ec_bytes bytes ($es shards + $(files ec parity) parity): ${disk}x"

best() {  # best samples/s of three runs of dataset $1
  local b=0 out sps
  for _ in 1 2 3; do
    out=$("$probe" --server "$servers" --dataset "$1" --world 2 --batch-size 256)
    sps=$(echo "$out" | field samples_per_s)
    [ "$(echo "$out" | field exactly_once)" = yes ] || { echo "not exactly once: $out" >&2; exit 1; }
    [ "$sps" -gt "$b" ] && b=$sps
  done
  echo "$b"
}
rep_sps=$(best rep); ec_sps=$(best ec)
healthy=$(/usr/bin/python3 -c "print(f'{$ec_sps/$rep_sps:.2f}')")
echo "2. healthy: replication 3 $rep_sps samples/s, ec:4+2 $ec_sps samples/s: ${healthy}x"

kill -9 "$(cat "$work/six/node-2.pid")"
once() {  # samples/s of one run of dataset $1 with node-2 gone
  local out
  out=$("$probe" --server "$servers" --dataset "$1" --world 2 --batch-size 256 --stall-ms 1000)
  [ "$(echo "$out" | field exactly_once)" = yes ] || { echo "not exactly once: $out" >&2; exit 1; }
  echo "$out" | field samples_per_s
}
rep_deg=$(once rep); ec_deg=$(once ec); ec_deg2=$(once ec)
echo "3. one node down: replication 3 $rep_deg samples/s; ec:4+2 $ec_deg samples/s (first epoch, rebuilding), $ec_deg2 (second)"

csv="$root/bench/results/erasure.csv"
{
  echo "measure,value,unit,detail"
  echo "disk_replication_3,$rep_bytes,bytes,$samples x $size shards of $shard"
  echo "disk_ec_4_2,$ec_bytes,bytes,$samples x $size shards of $shard"
  echo "disk_ec_over_replication,$disk,ratio,"
  echo "stream_healthy_replication_3,$rep_sps,samples/s,6 nodes 2 ranks batch 256 best of 3"
  echo "stream_healthy_ec_4_2,$ec_sps,samples/s,6 nodes 2 ranks batch 256 best of 3"
  echo "stream_healthy_ec_over_replication,$healthy,ratio,"
  echo "stream_degraded_replication_3,$rep_deg,samples/s,node-2 killed"
  echo "stream_degraded_ec_4_2_first,$ec_deg,samples/s,node-2 killed: shards rebuilt on first read"
  echo "stream_degraded_ec_4_2_second,$ec_deg2,samples/s,node-2 killed: rebuilt copies"
} >"$csv"
cat "$csv"
