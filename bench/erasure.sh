#!/usr/bin/env bash
# Erasure coding against replication, in one run on 6 loopback nodes, the same data:
#   1. disk used by --redundancy ec:4+2 against --replication 3 (every node's files for the
#      dataset, once the ingesting node's hand-off copies are released; target <= 0.55x);
#   2. healthy streaming throughput, ec against replicas (best of 3; target >= 0.95x);
#   3. degraded throughput with one node stopped (kill -9), ec against replicas: the first
#      reads of each lost shard wait for its rebuild from 4 others;
#   4. repair of a lost node, each dataset alone on the cluster: node-3 is killed and kept
#      down past grace_period_s; from the moment it leaves the map until the dataset's
#      last repair (the survivors' logs), the bytes node-3 held of it per second: ec
#      rebuilds its chunks from 4 others (and copies the chunks whose stripe positions
#      shift), replication copies them.
# Usage: bench/erasure.sh [--samples N] [--size SIZE] [--shard-size SIZE] [--grace S]
# Needs a build in ./build. Writes bench/results/erasure.csv.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="$root/build"
samples=20000
size=8KiB
shard=4MiB
grace=20  # cluster.grace_period_s: longer than step 3, which runs with node-2 down
while [ $# -gt 0 ]; do
  case "$1" in
    --samples) samples="$2"; shift 2 ;;
    --size) size="$2"; shift 2 ;;
    --shard-size) shard="$2"; shift 2 ;;
    --grace) grace="$2"; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
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
printf 'cluster:\n  repair_interval_ms: 300\n  grace_period_s: %d\n' "$grace" >"$work/fast.yaml"
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

killed_at=$(date +%s)
kill -9 "$(cat "$work/six/node-2.pid")"
once() {  # samples/s of one run of dataset $1 with node-2 gone
  local out
  out=$("$probe" --server "$servers" --dataset "$1" --world 2 --batch-size 256 --stall-ms 1000)
  [ "$(echo "$out" | field exactly_once)" = yes ] || { echo "not exactly once: $out" >&2; exit 1; }
  echo "$out" | field samples_per_s
}
rep_deg=$(once rep); ec_deg=$(once ec); ec_deg2=$(once ec)
echo "3. one node down: replication 3 $rep_deg samples/s; ec:4+2 $ec_deg samples/s (first epoch, rebuilding), $ec_deg2 (second)"
[ $(($(date +%s) - killed_at)) -lt "$grace" ] ||
  echo "   (step 3 outlasted grace_period_s $grace: node-2 left the map and repair ran during it; try --grace)" >&2

# 4. Repair of a lost node, one dataset at a time (each alone on the cluster, so neither
# shares the repair loop with the other): node-3 is killed and kept down; once it leaves
# the map, every survivor repairs until none reports a file pending or a shard short.
# From the survivors' logs: node-3 leaves a survivor's map grace_period_s after that
# survivor logs it down (the earliest counts), and the repair ends at the dataset's last
# "repair: copied" or "erasure coding: rebuilt" line. The figure: the bytes node-3 held
# of the dataset over that time.
lost() { find "$work/six/node-3/shards/$1" -type f \( -name '*.shard' -o -name '*.parity' \) -printf '%s\n' | awk '{s+=$1} END {print s+0}'; }
members() { "$strata" status --server "127.0.0.1:$base" --json 2>/dev/null |
  /usr/bin/python3 -c 'import json,sys; print(len(json.load(sys.stdin)["map"]["nodes"]))' 2>/dev/null || echo 0; }
metric() {  # the sum of metric $1 over the 5 nodes left
  local sum=0 i v
  for i in 1 2 4 5 6; do
    v=$(curl -sf "http://127.0.0.1:$((base + 100 + i - 1))/metrics" | { grep "^$1{" || true; } |
      awk '{s+=$NF} END {print s+0}') || v=1  # no answer: not done
    sum=$(/usr/bin/python3 -c "print(int($sum + ${v:-1}))")
  done
  echo "$sum"
}
version() { "$strata" describe --server "127.0.0.1:$base" "$1" --json | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["dataset"]["version"])'; }
repair_of() {  # prints "<seconds> <bytes written> <MB/s> <bytes node-3 held>" for dataset $1
  local held killed quiet=0
  held=$(lost "$1")
  killed=$(date +%s.%N)
  kill -9 "$(cat "$work/six/node-3.pid")"
  for _ in $(seq $((10 * grace + 300))); do [ "$(members)" = 5 ] && break; sleep 0.1; done
  for _ in $(seq 1200); do
    if [ "$(metric strata_repair_files_pending)" = 0 ] && [ "$(metric strata_shards_under_replicated)" = 0 ] &&
      [ "$(metric strata_shards_missing)" = 0 ]; then
      quiet=$((quiet + 1)); [ "$quiet" -ge 3 ] && break
    else
      quiet=0
    fi
    sleep 0.3
  done
  [ "$quiet" -ge 3 ] || { echo "repair of $1 did not finish" >&2; exit 1; }
  /usr/bin/python3 - "$work/six" "$grace" "$1" "$held" "$killed" <<'PY'
import datetime, os, re, sys
work, grace, dataset, held, killed = sys.argv[1], float(sys.argv[2]), sys.argv[3], int(sys.argv[4]), float(sys.argv[5])
def when(line):
    try:
        return datetime.datetime.strptime(line[:23], "%Y-%m-%dT%H:%M:%S.%f").timestamp()
    except ValueError:
        return None
down, events = [], []
for i in (1, 2, 4, 5, 6):
    for line in open(f"{work}/node-{i}.log", errors="replace"):
        t = when(line)
        if t is None or t < killed:
            continue
        if "membership: node-3 is down" in line:
            down.append(t)
        m = re.search(r"repair: copied (\w+)@(\d+)/(\d+)\.(\w+) from \S+ \((\d+) bytes\)", line)
        if m and m.group(1) == dataset:
            events.append((t, int(m.group(5))))
        m = re.search(r"erasure coding: rebuilt (\w+)@(\d+)/(\d+)\.(\w+) from", line)
        if m and m.group(1) == dataset:
            ds, v, seq, ext = m.groups()
            path = f"{work}/node-{i}/shards/{ds}/v{v}/{int(seq):06d}.{ext}"
            events.append((t, os.path.getsize(path) if os.path.exists(path) else 0))
left = min(down) + grace
mine = [e for e in events if e[0] >= left]
secs = max(e[0] for e in mine) - left if mine else 0
print(f"{secs:.2f} {sum(e[1] for e in mine)} {held / secs / 1e6 if secs > 0 else 0:.1f} {held}")
PY
}
settled() {  # every node is a member again and up, and each file of dataset(s) $@ sits only at its holders
  local ds ok
  for _ in $(seq 600); do
    ok=1
    [ "$(members)" = 6 ] || ok=0
    for ds in "$@"; do
      case "$ds" in
        rep) [ "$(files rep shard)" -eq $((3 * rs)) ] || ok=0 ;;
        ec) [ "$(files ec shard)" -eq "$es" ] && [ "$(files ec parity)" -eq $((2 * ((es + 3) / 4))) ] || ok=0 ;;
      esac
    done
    [ "$ok" = 1 ] && return 0
    sleep 0.2
  done
  return 1
}
# node-2 comes back (down less than the grace period: still a member); the copies its
# absence caused are released. Then replication alone: ec is deleted first.
"$cluster" restart --node 2 --dir "$work/six" >/dev/null
settled rep ec || { echo "copies rebuilt while node-2 was down were not released" >&2; exit 1; }
"$strata" rm --server "127.0.0.1:$base" "ec@$(version ec)" >/dev/null
read -r rep_secs rep_moved rep_mbs rep_lost <<<"$(repair_of rep)"
# node-3 comes back and gets its files again; ec is ingested anew and rep deleted.
"$cluster" restart --node 3 --dir "$work/six" >/dev/null
settled rep || { echo "node-3 did not get its copies back" >&2; exit 1; }
"$strata" ingest -q --server "127.0.0.1:$base" --dataset ec --redundancy ec:4+2 --shard-size "$shard" "$work/data"/*.tar >/dev/null
es=$(shards ec)
settled ec || { echo "the new ec version's hand-off copies were not released" >&2; exit 1; }
"$strata" rm --server "127.0.0.1:$base" "rep@$(version rep)" >/dev/null
read -r ec_secs ec_moved ec_mbs ec_lost <<<"$(repair_of ec)"
echo "4. node-3 lost: replication 3 $rep_lost bytes back in ${rep_secs}s ($rep_mbs MB/s, $rep_moved bytes written); ec:4+2 $ec_lost bytes in ${ec_secs}s ($ec_mbs MB/s, $ec_moved bytes written)"

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
  echo "repair_replication_3,$rep_mbs,MB/s,node-3 lost (alone on the cluster): $rep_lost bytes held restored in ${rep_secs}s ($rep_moved bytes copied)"
  echo "repair_ec_4_2,$ec_mbs,MB/s,node-3 lost (alone on the cluster): $ec_lost bytes held restored in ${ec_secs}s ($ec_moved bytes copied or rebuilt)"
} >"$csv"
cat "$csv"
