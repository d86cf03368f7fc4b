#!/usr/bin/env bash
# Ingest throughput with one writer and with several (`strata ingest --writers N`),
# in one run on a local 3-node cluster (loopback): the same tars, replication 3,
# write policy sync, taking turns --repeats times (default 3); best and median
# samples/s and MB/s of each, and the ratio of the medians.
# On one machine every node and writer share its cores: the ratio shows what
# spreading the work over the nodes gains or costs here, not on a cluster whose
# nodes have cores and links of their own.
# Usage: bench/ingest_writers.sh [--samples N] [--size 4KiB] [--writers 4] [--repeats 3]
# Needs a build in ./build. Writes bench/results/ingest_writers.csv.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="$root/build"
samples=200000
size=4KiB
writers=4
repeats=3
while [ $# -gt 0 ]; do
  case "$1" in
    --samples) samples="$2"; shift 2 ;;
    --size) size="$2"; shift 2 ;;
    --writers) writers="$2"; shift 2 ;;
    --repeats) repeats="$2"; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "ingest_writers.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
[[ "$writers" =~ ^[0-9]+$ ]] && [ "$writers" -ge 2 ] || { echo "ingest_writers.sh: --writers must be 2 or more" >&2; exit 2; }
work="$(mktemp -d /tmp/strata-ingest-writers-XXXXXX)"
cluster="$root/deploy/local/cluster.sh"
cleanup() {
  "$cluster" stop --dir "$work/c" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$root/bench/results"
base=$((21000 + RANDOM % 10000))

# As many tars as writers times three, so that each writer gets the same share.
tars=$((writers * 3))
echo "== data: $samples samples of $size in $tars tars"
"$bin/bench/strata-make-dataset" --out "$work/data" --format tar --samples "$samples" --size "$size" \
  --samples-per-tar $(((samples + tars - 1) / tars)) >/dev/null 2>&1
"$cluster" start --nodes 3 --base-port "$base" --dir "$work/c" >/dev/null
servers="127.0.0.1:$base,127.0.0.1:$((base + 1)),127.0.0.1:$((base + 2))"

runs="$work/runs.csv"
: >"$runs"
ingest() {  # ingest WRITERS NAME: prints samples/s and MB/s
  local extra=()
  [ "$1" -gt 1 ] && extra=(--writers "$1")
  "$bin/client/strata" ingest -q --server "$servers" --dataset "$2" --replication 3 "${extra[@]}" "$work/data"/*.tar |
    grep -oE '[0-9,.]+ samples/s, [0-9,.]+ MB/s' | sed -E 's/,//g; s/ samples\/s//; s/ MB\/s//'
}
for rep in $(seq "$repeats"); do
  for w in 1 "$writers"; do
    read -r sps mbs <<<"$(ingest "$w" "w$w-r$rep")"
    echo "run $rep: $w writer(s): $sps samples/s, $mbs MB/s"
    echo "$w,$sps,$mbs" >>"$runs"
    # Free the disk for the next run: the versions are not read.
    "$bin/client/strata" rm --server "$servers" "w$w-r$rep@1" >/dev/null 2>&1 || true
  done
done

csv="$root/bench/results/ingest_writers.csv"
/usr/bin/python3 - "$runs" "$writers" >"$csv" <<'PY'
import csv, statistics, sys
runs = {}
for w, sps, mbs in csv.reader(open(sys.argv[1])):
    runs.setdefault(int(w), []).append((float(sps), float(mbs)))
many = int(sys.argv[2])
median = {w: statistics.median(s for s, _ in r) for w, r in runs.items()}
print("writers,best_samples_per_s,best_mb_per_s,median_samples_per_s,median_mb_per_s,median_ratio_to_one")
for w, r in sorted(runs.items()):
    best = max(r)
    print(f"{w},{best[0]:.0f},{best[1]:.1f},{median[w]:.0f},{statistics.median(m for _, m in r):.1f},"
          f"{median[w] / median[1]:.2f}")
PY
echo
column -s, -t "$csv"
