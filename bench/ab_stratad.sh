#!/usr/bin/env bash
# Two stratad binaries, A and B, on the same data side by side: how a change to
# the server moves its streaming rate, on a host whose speed drifts by more
# than most changes move it.
#
# The dataset is ingested twice (by A), into the data directories of two
# clusters, which then hold the same shards written alike. (A copy made with
# cp instead streamed 10-15% slower than the original here, whichever binary
# served it; the shards ingest writes lie in 2 MiB page-cache folios.) Both
# clusters run at once, one A's and one B's, and `strata stream` goes to them
# in pairs, A then B, then B then A: the host's drift falls on both streams of
# a pair alike. From round to round the binaries swap clusters, so that
# whatever still differs between the two falls on both binaries alike. Prints
# every pair, each binary's median, each round's median of B/A over its
# pairs, and the geometric mean of the rounds' medians: the figure to quote.
# Two runs of A against itself gave 0.964 and 1.013 on a 2-core VM. The same
# for the CPU time the servers spent per sample (user + system, from
# /proc/PID/stat around each stream): a change that frees CPU shows there even
# when the client, on the same cores, keeps the rate where it was.
#
# Usage: bench/ab_stratad.sh A_STRATAD B_STRATAD [options] [-- STRATAD_ARGS...]
#   --samples N   samples in the dataset (default 300000)
#   --size SIZE   bytes per sample, as strata-make-dataset takes it (default 1KiB)
#   --batch N     batch size (default 256)
#   --nodes N     nodes in each cluster (default 1); with more, the dataset is
#                 ingested with --replication 1 and every stream reads all nodes
#   --replication R  copies of each shard with several nodes (default 1)
#   --rounds N    rounds, an even number (default 4)
#   --pairs N     pairs of streams in each round (default 5)
#   --world N     streams running at once, one rank each (default 1)
#   --shard-size SIZE  shard size for the ingest (default: the server's)
# STRATAD_ARGS go to both servers (for example --memory-budget 96MiB).
# Build A by checking out the base commit into another tree, or keep a copy of
# build/server/stratad from before a change.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
usage() { sed -n '2,34p' "$0" | sed 's/^# \{0,1\}//'; }
[ $# -ge 1 ] && { [ "$1" = -h ] || [ "$1" = --help ]; } && { usage; exit 0; }
[ $# -ge 2 ] || { usage >&2; exit 2; }
a="$1" b="$2"; shift 2
samples=300000 size=1KiB batch=256 nodes=1 copies=1 rounds=4 pairs=5 world=1 extra=() shard_size=()
while [ $# -gt 0 ]; do
  case "$1" in
    --samples) samples="$2"; shift 2 ;;
    --size) size="$2"; shift 2 ;;
    --batch) batch="$2"; shift 2 ;;
    --nodes) nodes="$2"; shift 2 ;;
    --replication) copies="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --pairs) pairs="$2"; shift 2 ;;
    --world) world="$2"; shift 2 ;;
    --shard-size) shard_size=(--shard-size "$2"); shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) usage; exit 0 ;;
    *) echo "ab_stratad.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
for x in "$a" "$b"; do [ -x "$x" ] || { echo "ab_stratad.sh: $x is not an executable" >&2; exit 2; }; done
for n in "$samples" "$batch" "$nodes" "$copies" "$rounds" "$pairs" "$world"; do
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "ab_stratad.sh: counts must be positive numbers (got $n)" >&2; exit 2; }
done
[ $((rounds % 2)) = 0 ] || { echo "ab_stratad.sh: --rounds must be even (each binary serves from each cluster as often)" >&2; exit 2; }
strata="$root/build/client/strata"
make="$root/build/bench/strata-make-dataset"
[ -x "$strata" ] && [ -x "$make" ] || { echo "ab_stratad.sh: no build in $root/build; run deploy/local/build.sh" >&2; exit 2; }
cluster="$root/deploy/local/cluster.sh"
work="$(mktemp -d /tmp/strata-ab-XXXXXX)"
trap '"$cluster" stop --dir "$work/1" >/dev/null 2>&1 || true; "$cluster" stop --dir "$work/2" >/dev/null 2>&1 || true
      rm -rf "$work"' EXIT
port=$((23000 + RANDOM % 5000))  # cluster 1 serves on port.., cluster 2 on port+20..
start() {                         # binary cluster
  STRATAD="$1" "$cluster" start --nodes "$nodes" --base-port $((port + 20 * ($2 - 1))) \
    --metrics-base-port $((port + 100 + 20 * ($2 - 1))) --dir "$work/$2" -- ${extra[@]+"${extra[@]}"} >/dev/null
}
stop() { "$cluster" stop --dir "$work/$1" >/dev/null; }
servers() {  # cluster -> its nodes' addresses
  local s="" i
  for i in $(seq 0 $((nodes - 1))); do s+="${s:+,}127.0.0.1:$((port + 20 * ($1 - 1) + i))"; done
  echo "$s"
}

echo "making $samples samples of $size and ingesting them with A into two clusters of $nodes node(s)"
"$make" --out "$work/src" --format tar --samples "$samples" --size "$size" --classes 10 >/dev/null
replication=(); [ "$nodes" -gt 1 ] && replication=(--replication "$copies")
for c in 1 2; do
  start "$a" $c
  "$strata" ingest -q --server "$(servers $c)" --dataset ab ${replication[@]+"${replication[@]}"} \
    ${shard_size[@]+"${shard_size[@]}"} "$work/src"/*.tar >/dev/null
  stop $c
done
rm -rf "$work/src"

server_ticks() {  # cluster -> CPU clock ticks its servers have used
  local t=0 f
  for f in "$work/$1"/node-*.pid; do t=$((t + $(awk '{print $14 + $15}' "/proc/$(cat "$f")/stat"))); done
  echo "$t"
}
one_stream() {  # cluster -> "samples/s of all `world` ranks together, servers' CPU µs per sample"
  local t0 t1 pids=() r c0 c1
  c0=$(server_ticks "$1")
  t0=$(date +%s.%N)
  for r in $(seq 0 $((world - 1))); do
    "$strata" stream --server "$(servers "$1")" --dataset ab --batch-size "$batch" \
      --world "$world" --rank "$r" --quiet >/dev/null &
    pids+=($!)
  done
  wait "${pids[@]}"
  t1=$(date +%s.%N)
  c1=$(server_ticks "$1")
  /usr/bin/python3 -c "print(round($samples / ($t1 - $t0)), round(($c1 - $c0) / $(getconf CLK_TCK) / $samples * 1e6, 3))"
}

results=""  # lines "round a_rate b_rate a_cpu b_cpu"
for round in $(seq 1 "$rounds"); do
  a_on=$((1 + (round - 1) % 2)) b_on=$((2 - (round - 1) % 2))
  start "$a" "$a_on"
  start "$b" "$b_on"
  for c in 1 2; do find "$work/$c" -path '*/shards/*' -type f -exec cat {} + >/dev/null; done  # page cache
  one_stream "$a_on" >/dev/null  # each server opens the version once before the pairs
  one_stream "$b_on" >/dev/null
  for p in $(seq 1 "$pairs"); do
    if [ $((p % 2)) = 1 ]; then
      read -r ra ca < <(one_stream "$a_on"); read -r rb cb < <(one_stream "$b_on")
    else
      read -r rb cb < <(one_stream "$b_on"); read -r ra ca < <(one_stream "$a_on")
    fi
    echo "round $round (A on cluster $a_on)  pair $p  A $ra  B $rb samples/s  servers' CPU A $ca  B $cb µs/sample"
    results+="$round $ra $rb $ca $cb"$'\n'
  done
  stop 1
  stop 2
done
/usr/bin/python3 - "$results" <<'PY'
import math, statistics, sys
rows = [line.split() for line in sys.argv[1].splitlines() if line.strip()]
a = [int(r[1]) for r in rows]
b = [int(r[2]) for r in rows]
print(f"A: median {statistics.median(a):,.0f} samples/s (range {min(a):,}-{max(a):,}, {len(a)} streams)")
print(f"B: median {statistics.median(b):,.0f} samples/s (range {min(b):,}-{max(b):,}, {len(b)} streams)")
medians = []
for r in sorted({row[0] for row in rows}, key=int):
    ratios = [int(row[2]) / int(row[1]) for row in rows if row[0] == r]
    medians.append(statistics.median(ratios))
    print(f"round {r}: median B/A over its pairs {medians[-1]:.3f}")
mean = math.exp(sum(math.log(m) for m in medians) / len(medians))
print(f"B / A: {mean:.3f} (geometric mean of the rounds)")
ca = [float(r[3]) for r in rows]
cb = [float(r[4]) for r in rows]
if min(ca) > 0 and min(cb) > 0:
    print(f"servers' CPU per sample: A median {statistics.median(ca):.3f} µs, B median {statistics.median(cb):.3f} µs")
    cpu = []
    for r in sorted({row[0] for row in rows}, key=int):
        cpu.append(statistics.median(float(row[4]) / float(row[3]) for row in rows if row[0] == r))
    print(f"servers' CPU per sample, B / A: {math.exp(sum(math.log(m) for m in cpu) / len(cpu)):.3f} "
          "(geometric mean of the rounds' medians)")
PY
