#!/usr/bin/env bash
# Two strata CLI binaries, A and B, against one local cluster: how a change to
# the client moves its CPU per epoch and its streaming rate, measured in one
# run so that this noisy VM's drift falls on both alike.
#
# The cluster (this build's stratad, --nodes of them, replication 1 when
# there are several, or --replication) ingests the dataset once; then, round
# after round, A and B take turns streaming the whole epoch with `strata
# stream`. Prints every figure, each binary's median client CPU (user +
# system seconds, from the kernel's accounting of the child) and samples/s,
# and B's medians over A's.
#
# Usage: bench/ab_client.sh A_STRATA B_STRATA [options]
#   --nodes N     nodes in the cluster (default 3)
#   --samples N   samples in the dataset (default 300000)
#   --size SIZE   bytes per sample, as strata-make-dataset takes it (default 1KiB)
#   --batch N     batch size (default 256)
#   --rounds N    turns of A then B (default 5)
#   --replication R  copies of each shard on several nodes (default 1)
# Keep a copy of build/client/strata from before a change as A.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
usage() { sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; }
[ $# -ge 1 ] && { [ "$1" = -h ] || [ "$1" = --help ]; } && { usage; exit 0; }
[ $# -ge 2 ] || { usage >&2; exit 2; }
a="$1" b="$2"; shift 2
nodes=3 samples=300000 size=1KiB batch=256 rounds=5 copies=1
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) nodes="$2"; shift 2 ;;
    --samples) samples="$2"; shift 2 ;;
    --size) size="$2"; shift 2 ;;
    --batch) batch="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --replication) copies="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "ab_client.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
for bin in "$a" "$b"; do [ -x "$bin" ] || { echo "ab_client.sh: $bin is not an executable" >&2; exit 2; }; done
build="$root/build"
[ -x "$build/server/stratad" ] || { echo "ab_client.sh: no build in $build; run deploy/local/build.sh" >&2; exit 2; }
py=/usr/bin/python3
cluster="$root/deploy/local/cluster.sh"
work="$(mktemp -d /tmp/strata-ab-client-XXXXXX)"
trap '"$cluster" stop --dir "$work/cluster" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
base=$((21000 + RANDOM % 10000))

echo "== $nodes node(s), replication $copies, $samples samples of $size, batch $batch, $rounds rounds"
"$build/bench/strata-make-dataset" --out "$work/data" --format tar --samples "$samples" --size "$size" \
  --samples-per-tar 10000 --classes 10 >/dev/null
"$cluster" start --nodes "$nodes" --base-port "$base" --dir "$work/cluster" >/dev/null
servers=""
for i in $(seq 0 $((nodes - 1))); do servers+="${servers:+,}127.0.0.1:$((base + i))"; done
replication=()
[ "$nodes" -gt 1 ] && replication=(--replication "$copies")
"$build/client/strata" ingest -q --server "127.0.0.1:$base" --dataset ab "${replication[@]}" "$work/data"/*.tar >/dev/null
"$build/client/strata" stream --server "$servers" --dataset ab --batch-size "$batch" --quiet >/dev/null  # warm

# One epoch by $1: "cpu_seconds samples_per_s", the CPU from getrusage of the child.
measure() {
  "$py" - "$1" "$servers" "$batch" <<'EOF'
import re, resource, subprocess, sys
binary, servers, batch = sys.argv[1:4]
out = subprocess.run([binary, "stream", "--server", servers, "--dataset", "ab", "--batch-size", batch, "--quiet"],
                     check=True, capture_output=True, text=True).stdout
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
rate = re.search(r"([0-9,]+) samples/s", out).group(1).replace(",", "")
print(f"{usage.ru_utime + usage.ru_stime:.3f} {rate}")
EOF
}
: >"$work/a" && : >"$work/b"
for r in $(seq "$rounds"); do
  for side in a b; do
    bin=$a; [ $side = b ] && bin=$b
    read -r cpu rate <<<"$(measure "$bin")"
    echo "$cpu $rate" >>"$work/$side"
    printf '  round %d %s: client CPU %6.3f s, %9s samples/s\n' "$r" "$(echo $side | tr ab AB)" "$cpu" "$rate"
  done
done
"$py" - "$work/a" "$work/b" <<'EOF'
import statistics, sys
med = []
for path, name in zip(sys.argv[1:], "AB"):
    rows = [tuple(map(float, line.split())) for line in open(path)]
    cpu, rate = statistics.median(r[0] for r in rows), statistics.median(r[1] for r in rows)
    med.append((cpu, rate))
    print(f"  {name} median: client CPU {cpu:.3f} s per epoch, {rate:,.0f} samples/s")
print(f"  B / A: client CPU {med[1][0] / med[0][0]:.2f}x, samples/s {med[1][1] / med[0][1]:.2f}x")
EOF
