#!/usr/bin/env bash
# Three nodes on one machine against one node, beside what this machine allows
# any three-node design: the same epoch (shuffled, batch 256) streamed by
# strata-stream-probe, taking turns, --repeats times (default 7):
#   one           a 1-node cluster, one rank
#   one_3_ranks   the same node, three ranks in one process (three streams)
#   separate_3    three separate 1-node clusters, each holding the whole set,
#                 three ranks in one process, rank r reading node r alone
#                 (--rank-per-server): each node plans and sends whole steps,
#                 the client joins nothing and plans nothing
#   separate_3_procs  the same three nodes, each streamed whole by a process of
#                 its own (three trainers, one rank each): three times the
#                 samples, over the longest of the three runs
#   cluster_R3    a 3-node cluster, three copies of each shard, one rank
#   cluster_R1    the same cluster, one copy of each shard, one rank
# Prints each one's median samples/s (and its slowest and fastest run) and
# the median's ratio to `one`. All processes
# share this machine's cores, so the rate follows the CPU each sample costs
# everyone; separate_3 is the reference for the cost of three servers and
# three connections alone (docs/performance.md, "Three nodes on one host").
# Usage: bench/three_nodes.sh [--samples 300000] [--size 1KiB] [--repeats 7]
# Needs a build in ./build. Writes bench/results/three_nodes.csv.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="$root/build"
samples=300000
size=1KiB
repeats=7
while [ $# -gt 0 ]; do
  case "$1" in
    --samples) samples="$2"; shift 2 ;;
    --size) size="$2"; shift 2 ;;
    --repeats) repeats="$2"; shift 2 ;;
    -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "three_nodes.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
[[ "$repeats" =~ ^[1-9][0-9]*$ ]] || { echo "three_nodes.sh: --repeats must be a positive number" >&2; exit 2; }
for b in server/stratad client/strata bench/strata-stream-probe bench/strata-make-dataset; do
  [ -x "$bin/$b" ] || { echo "three_nodes.sh: no $bin/$b (build first: deploy/local/build.sh)" >&2; exit 1; }
done
work="$(mktemp -d /tmp/strata-three-nodes-XXXXXX)"
cluster="$root/deploy/local/cluster.sh"
dirs=(one three sep0 sep1 sep2)
cleanup() {
  for d in "${dirs[@]}"; do "$cluster" stop --dir "$work/$d" >/dev/null 2>&1 || true; done
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$root/bench/results"
base=$((21000 + RANDOM % 9000))
strata="$bin/client/strata"

echo "== data: $samples samples of $size; 1 node, 3 nodes (R=3 and R=1), 3 separate nodes"
"$bin/bench/strata-make-dataset" --out "$work/data" --format tar --samples "$samples" --size "$size" \
  --samples-per-tar 10000 >/dev/null 2>&1
ingest() { "$strata" ingest -q --server "$1" --dataset "$2" "${@:3}" "$work/data"/*.tar >/dev/null; }
"$cluster" start --nodes 1 --base-port "$base" --dir "$work/one" >/dev/null
ingest "127.0.0.1:$base" set
"$cluster" start --nodes 3 --base-port $((base + 10)) --dir "$work/three" >/dev/null
three="127.0.0.1:$((base + 10)),127.0.0.1:$((base + 11)),127.0.0.1:$((base + 12))"
ingest "$three" set3 --replication 3
ingest "$three" set1 --replication 1
separate=""
for i in 0 1 2; do
  port=$((base + 20 + 10 * i))
  "$cluster" start --nodes 1 --base-port "$port" --dir "$work/sep$i" >/dev/null
  ingest "127.0.0.1:$port" set
  separate="$separate${separate:+,}127.0.0.1:$port"
done

field() { tr ' ' '\n' | sed -n "s/^$1=//p"; }
probe() {  # probe SERVERS DATASET WORLD [ARGS...] -> samples/s, or exits if not exactly once
  local out
  out=$("$bin/bench/strata-stream-probe" --server "$1" --dataset "$2" --world "$3" --batch-size 256 \
    --stall-ms 10000 "${@:4}")
  [ "$(echo "$out" | field exactly_once)" = yes ] || { echo "three_nodes.sh: not exactly once: $out" >&2; exit 1; }
  echo "$out" | field samples_per_s
}
procs() {  # three probes at once, one per separate node -> all their samples / the longest run's seconds
  local i pids=()
  for i in 0 1 2; do
    "$bin/bench/strata-stream-probe" --server "$(echo "$separate" | cut -d, -f$((i + 1)))" --dataset set --world 1 \
      --batch-size 256 --stall-ms 10000 >"$work/proc$i" &
    pids+=($!)
  done
  wait "${pids[@]}"
  for i in 0 1 2; do
    [ "$(field exactly_once <"$work/proc$i")" = yes ] || { echo "three_nodes.sh: not exactly once: $(cat "$work/proc$i")" >&2; exit 1; }
  done
  cat "$work"/proc[012] | /usr/bin/python3 -c "
import sys
f = [dict(kv.split('=', 1) for kv in l.split()) for l in sys.stdin if l.strip()]
print(round(sum(int(x['samples']) for x in f) / max(float(x['seconds']) for x in f)))"
}
run() {  # run NAME -> samples/s
  case "$1" in
    one) probe "127.0.0.1:$base" set 1 ;;
    one_3_ranks) probe "127.0.0.1:$base" set 3 ;;
    separate_3) probe "$separate" set 3 --rank-per-server ;;
    separate_3_procs) procs ;;
    cluster_R3) probe "$three" set3 1 ;;
    cluster_R1) probe "$three" set1 1 ;;
  esac
}
kinds=(one one_3_ranks separate_3 separate_3_procs cluster_R3 cluster_R1)
for k in "${kinds[@]}"; do run "$k" >/dev/null; done  # warm-up: connections, page cache

runs="$work/runs.csv"
: >"$runs"
for rep in $(seq "$repeats"); do
  line="run $rep:"
  for k in "${kinds[@]}"; do
    sps=$(run "$k")
    echo "$k,$sps" >>"$runs"
    line="$line $k $sps"
  done
  echo "$line"
done
/usr/bin/python3 - "$runs" "$root/bench/results/three_nodes.csv" "$samples" "$size" "$repeats" <<'EOF'
import csv, statistics, sys
runs, out, samples, size, repeats = sys.argv[1:]
rows = list(csv.reader(open(runs)))
kinds = list(dict.fromkeys(r[0] for r in rows))
med = {k: statistics.median(float(r[1]) for r in rows if r[0] == k) for k in kinds}
low = {k: min(float(r[1]) for r in rows if r[0] == k) for k in kinds}
high = {k: max(float(r[1]) for r in rows if r[0] == k) for k in kinds}
with open(out, "w") as f:
    f.write("setup,samples_per_s_median,samples_per_s_min,samples_per_s_max,vs_one,samples,size,repeats\n")
    for k in kinds:
        print(f"{k:16} median {med[k]:>10,.0f} samples/s (runs {low[k]:,.0f} to {high[k]:,.0f})"
              f"   x{med[k] / med['one']:.2f} of one node")
        f.write(f"{k},{med[k]:.0f},{low[k]:.0f},{high[k]:.0f},{med[k] / med['one']:.2f},{samples},{size},{repeats}\n")
EOF
