#!/usr/bin/env bash
# Two stratad binaries, A and B, side by side on one data directory: how a
# change to the server moves its streaming rate, measured in one run so that
# this noisy VM's drift falls on both alike.
#
# The dataset is ingested once (by A); then, round after round, A and B take
# turns: each is started on the same data directory, its shards are read into
# the page cache, and `strata stream` runs --streams times against it. Prints
# every figure, the median of each binary and B's median over A's.
#
# Usage: bench/ab_stratad.sh A_STRATAD B_STRATAD [options] [-- STRATAD_ARGS...]
#   --samples N   samples in the dataset (default 300000)
#   --size SIZE   bytes per sample, as strata-make-dataset takes it (default 1KiB)
#   --batch N     batch size (default 256)
#   --rounds N    turns of A then B (default 3)
#   --streams N   streams per turn (default 3)
#   --world N     streams running at once, one rank each (default 1)
# STRATAD_ARGS go to both servers (for example --memory-budget 96MiB).
# Build A by checking out the base commit into another tree, or keep a copy of
# build/server/stratad from before a change.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
usage() { sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; }
[ $# -ge 1 ] && { [ "$1" = -h ] || [ "$1" = --help ]; } && { usage; exit 0; }
[ $# -ge 2 ] || { usage >&2; exit 2; }
a="$1" b="$2"; shift 2
samples=300000 size=1KiB batch=256 rounds=3 streams=3 world=1 extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --samples) samples="$2"; shift 2 ;;
    --size) size="$2"; shift 2 ;;
    --batch) batch="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --streams) streams="$2"; shift 2 ;;
    --world) world="$2"; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) usage; exit 0 ;;
    *) echo "ab_stratad.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
for x in "$a" "$b"; do [ -x "$x" ] || { echo "ab_stratad.sh: $x is not an executable" >&2; exit 2; }; done
for n in "$samples" "$batch" "$rounds" "$streams" "$world"; do
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "ab_stratad.sh: counts must be positive numbers (got $n)" >&2; exit 2; }
done
strata="$root/build/client/strata"
make="$root/build/bench/strata-make-dataset"
[ -x "$strata" ] && [ -x "$make" ] || { echo "ab_stratad.sh: no build in $root/build; run deploy/local/build.sh" >&2; exit 2; }
cluster="$root/deploy/local/cluster.sh"
work="$(mktemp -d /tmp/strata-ab-XXXXXX)"
trap '"$cluster" stop --dir "$work/c" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
port=$((23000 + RANDOM % 5000))
start() { STRATAD="$1" "$cluster" start --nodes 1 --base-port "$port" --dir "$work/c" -- ${extra[@]+"${extra[@]}"} >/dev/null; }
stop() { "$cluster" stop --dir "$work/c" >/dev/null; }

echo "making $samples samples of $size and ingesting them with A"
"$make" --out "$work/src" --format tar --samples "$samples" --size "$size" --classes 10 >/dev/null
start "$a"
"$strata" ingest -q --server "127.0.0.1:$port" --dataset ab "$work/src"/*.tar >/dev/null
stop
rm -rf "$work/src"

one_stream() {  # -> samples/s of all `world` ranks together
  local t0 t1 pids=() r
  t0=$(date +%s.%N)
  for r in $(seq 0 $((world - 1))); do
    "$strata" stream --server "127.0.0.1:$port" --dataset ab --batch-size "$batch" \
      --world "$world" --rank "$r" --quiet >/dev/null &
    pids+=($!)
  done
  wait "${pids[@]}"
  t1=$(date +%s.%N)
  /usr/bin/python3 -c "print(round($samples / ($t1 - $t0)))"
}

declare -A figures=([A]="" [B]="")
for round in $(seq 1 "$rounds"); do
  for which in A B; do
    bin=$a; [ $which = B ] && bin=$b
    start "$bin"
    find "$work/c/node-1" -type f -exec cat {} + >/dev/null  # every shard in the page cache
    line=""
    for _ in $(seq 1 "$streams"); do
      s=$(one_stream)
      figures[$which]+="$s "
      line+="$s "
    done
    stop
    echo "round $round  $which  samples/s: $line"
  done
done
/usr/bin/python3 - "${figures[A]}" "${figures[B]}" <<'PY'
import statistics, sys
a = [int(x) for x in sys.argv[1].split()]
b = [int(x) for x in sys.argv[2].split()]
ma, mb = statistics.median(a), statistics.median(b)
print(f"A: median {ma:,.0f} samples/s (range {min(a):,}-{max(a):,}, {len(a)} streams)")
print(f"B: median {mb:,.0f} samples/s (range {min(b):,}-{max(b):,}, {len(b)} streams)")
print(f"B / A: {mb / ma:.3f}")
PY
