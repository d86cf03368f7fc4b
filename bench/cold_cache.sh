#!/usr/bin/env bash
# Two stratad binaries, A and B, serving one node's shards after the page
# cache dropped them (a reboot, memory pressure): how a change moves the
# first epoch from storage and every epoch after it.
#
# One node (A's) ingests the dataset. Then, turn after turn, A and B take
# turns: the node stopped, its shard files dropped from the page cache
# (POSIX_FADV_DONTNEED), the node started again with the turn's binary; one
# epoch (its time and the bytes the node read from storage, /proc/PID/io),
# a second, then the shard bytes the node maps with 2 MiB entries
# (FilePmdMapped) and, over --epochs more, the node's CPU per epoch (user +
# system, /proc/PID/stat) and the stream's samples/s. Prints every turn and
# each binary's medians, and B's over A's.
#
# Usage: bench/cold_cache.sh A_STRATAD B_STRATAD [options]
#   --samples N   samples in the dataset (default 300000)
#   --size SIZE   bytes per sample, as strata-make-dataset takes it (default 1KiB)
#   --batch N     batch size (default 256)
#   --rounds N    turns of A then B (default 4)
#   --epochs N    epochs measured in each turn (default 6)
# Keep a copy of build/server/stratad from before a change as A.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
usage() { sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; }
[ $# -ge 1 ] && { [ "$1" = -h ] || [ "$1" = --help ]; } && { usage; exit 0; }
[ $# -ge 2 ] || { usage >&2; exit 2; }
a="$1" b="$2"; shift 2
samples=300000 size=1KiB batch=256 rounds=4 epochs=6
while [ $# -gt 0 ]; do
  case "$1" in
    --samples) samples="$2"; shift 2 ;;
    --size) size="$2"; shift 2 ;;
    --batch) batch="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --epochs) epochs="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "cold_cache.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
for x in "$a" "$b"; do [ -x "$x" ] || { echo "cold_cache.sh: $x is not an executable" >&2; exit 2; }; done
for n in "$samples" "$batch" "$rounds" "$epochs"; do
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "cold_cache.sh: counts must be positive numbers (got $n)" >&2; exit 2; }
done
strata="$root/build/client/strata"
make="$root/build/bench/strata-make-dataset"
[ -x "$strata" ] && [ -x "$make" ] || { echo "cold_cache.sh: no build in $root/build; run deploy/local/build.sh" >&2; exit 2; }
py=/usr/bin/python3
cluster="$root/deploy/local/cluster.sh"
work="$(mktemp -d /tmp/strata-cold-XXXXXX)"
trap '"$cluster" stop --dir "$work/node" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
port=$((23000 + RANDOM % 5000))
server=127.0.0.1:$port
start() { STRATAD="$1" "$cluster" start --nodes 1 --base-port "$port" --metrics-base-port $((port + 100)) --dir "$work/node" >/dev/null; }
stop() { "$cluster" stop --dir "$work/node" >/dev/null; }
median() { sort -g | awk '{v[NR] = $1} END {printf "%.10g\n", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
stream() {  # -> "seconds samples_per_s" of one epoch
  "$strata" stream --server "$server" --dataset cold --batch-size "$batch" --quiet |
    awk '/^elapsed/ {gsub(/[,:]/, ""); t = $2; s = $3; if (t ~ /ms$/) {sub(/ms/, "", t); t /= 1000} else sub(/s$/, "", t); print t, s}'
}

echo "making $samples samples of $size and ingesting them with A"
"$make" --out "$work/data" --format tar --samples "$samples" --size "$size" --samples-per-tar 10000 >/dev/null
start "$a"
"$strata" ingest -q --server "$server" --dataset cold "$work/data"/*.tar >/dev/null
rm -rf "$work/data"
stop

for r in $(seq "$rounds"); do
  for v in A B; do
    bin=$a; [ $v = B ] && bin=$b
    stop 2>/dev/null || true
    "$py" - "$work/node" <<'EOF'
import glob, os, sys
for f in glob.glob(os.path.join(sys.argv[1], "node-1/shards/**/*.shard"), recursive=True):
    fd = os.open(f, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)
EOF
    start "$bin"
    pid=$(cat "$work/node/node-1.pid")
    read -r first _ <<<"$(stream)"
    read_mb=$(awk '/^read_bytes/ {printf "%d", $2 / 1048576}' "/proc/$pid/io")
    stream >/dev/null
    pmd_mb=$(awk '/FilePmdMapped/ {printf "%d", $2 / 1024}' "/proc/$pid/smaps_rollup")
    t0=$(ticks "$pid")
    rates=$(for _ in $(seq "$epochs"); do stream | cut -d' ' -f2; done | median)
    cpu=$("$py" -c "print(round(($(ticks "$pid") - $t0) / $(getconf CLK_TCK) / $epochs, 3))")
    echo "round $r $v: first epoch ${first}s, ${read_mb} MB read; ${pmd_mb} MB mapped in 2 MiB entries;" \
      "node CPU ${cpu} s an epoch, ${rates} samples/s"
    echo "$v $cpu $rates $first $read_mb" >>"$work/turns"
  done
done
for v in A B; do
  echo "$v median: node CPU $(awk -v v=$v '$1 == v {print $2}' "$work/turns" | median) s an epoch," \
    "$(awk -v v=$v '$1 == v {print $3}' "$work/turns" | median) samples/s," \
    "first epoch $(awk -v v=$v '$1 == v {print $4}' "$work/turns" | median) s, $(awk -v v=$v '$1 == v {print $5}' "$work/turns" | median) MB read"
done
"$py" - "$work/turns" <<'EOF'
import statistics, sys
turns = [line.split() for line in open(sys.argv[1])]
def med(v, i):
    return statistics.median(float(t[i]) for t in turns if t[0] == v)
print("B / A: node CPU %.2fx, samples/s %.2fx, first epoch %.2fx, bytes read %.2fx" %
      (med("B", 1) / med("A", 1), med("B", 2) / med("A", 2), med("B", 3) / med("A", 3), med("B", 4) / med("A", 4)))
EOF
