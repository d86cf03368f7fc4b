#!/usr/bin/env bash
# Who plans the stream: the client (the default) or every node (--plan-on-nodes
# of strata-stream-probe, ClientOptions.plan_on_client off), in one run on a
# local cluster (loopback, R=1): the same epoch streamed --repeats times
# (default 3) each way, taking turns. Per run: the client's samples/s and the
# nodes' CPU seconds (utime+stime from /proc, all nodes together) per million
# samples delivered; then the medians and their ratios.
# On one machine the nodes and the client share its cores: what the nodes stop
# spending on planning goes to whoever needs the cores.
# Usage: bench/client_planning.sh [--nodes 3] [--samples 300000] [--size 1KiB]
#          [--world 2] [--batch-size 256] [--repeats 3]
# Needs a build in ./build. Writes bench/results/client_planning.csv.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="$root/build"
nodes=3
samples=300000
size=1KiB
world=2
batch=256
repeats=3
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) nodes="$2"; shift 2 ;;
    --samples) samples="$2"; shift 2 ;;
    --size) size="$2"; shift 2 ;;
    --world) world="$2"; shift 2 ;;
    --batch-size) batch="$2"; shift 2 ;;
    --repeats) repeats="$2"; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "client_planning.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
[[ "$nodes" =~ ^[0-9]+$ ]] && [ "$nodes" -ge 2 ] || { echo "client_planning.sh: --nodes must be 2 or more" >&2; exit 2; }
for b in server/stratad client/strata bench/strata-stream-probe bench/strata-make-dataset; do
  [ -x "$bin/$b" ] || { echo "client_planning.sh: no $bin/$b (build first: deploy/local/build.sh)" >&2; exit 1; }
done
work="$(mktemp -d /tmp/strata-client-planning-XXXXXX)"
cluster="$root/deploy/local/cluster.sh"
cleanup() {
  "$cluster" stop --dir "$work/c" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$root/bench/results"
base=$((21000 + RANDOM % 10000))

echo "== data: $samples samples of $size on $nodes nodes (R=1)"
"$bin/bench/strata-make-dataset" --out "$work/data" --format tar --samples "$samples" --size "$size" \
  --samples-per-tar 10000 >/dev/null 2>&1
"$cluster" start --nodes "$nodes" --base-port "$base" --dir "$work/c" >/dev/null
servers="127.0.0.1:$base"
for i in $(seq 1 $((nodes - 1))); do servers="$servers,127.0.0.1:$((base + i))"; done
"$bin/client/strata" ingest -q --server "$servers" --dataset plan --replication 1 "$work/data"/*.tar >/dev/null
mapfile -t pids < <(pgrep -f "stratad .*$work/c" || true)
[ "${#pids[@]}" -eq "$nodes" ] || { echo "client_planning.sh: found ${#pids[@]} stratad processes, not $nodes" >&2; exit 1; }
hz=$(getconf CLK_TCK)
cpu() {  # all nodes' utime+stime, in clock ticks
  local p t=0
  for p in "${pids[@]}"; do t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done
  echo "$t"
}
field() { tr ' ' '\n' | sed -n "s/^$1=//p"; }
probe() {  # probe EPOCH [ARGS...]: prints the probe's line, or exits if not exactly once
  local out
  out=$("$bin/bench/strata-stream-probe" --server "$servers" --dataset plan --world "$world" --batch-size "$batch" \
    --epoch "$1" --stall-ms 10000 "${@:2}")
  [ "$(echo "$out" | field exactly_once)" = yes ] || { echo "client_planning.sh: not exactly once: $out" >&2; exit 1; }
  echo "$out"
}
probe 0 >/dev/null  # warm-up: connections, page cache

runs="$work/runs.csv"
: >"$runs"
for rep in $(seq "$repeats"); do
  for who in client nodes; do
    extra=(); [ "$who" = nodes ] && extra=(--plan-on-nodes)
    before=$(cpu)
    out=$(probe "$rep" ${extra[@]+"${extra[@]}"})
    after=$(cpu)
    sps=$(echo "$out" | field samples_per_s)
    n=$(echo "$out" | field samples)
    per_m=$(/usr/bin/python3 -c "print(f'{($after - $before) / $hz / ($n / 1e6):.2f}')")
    echo "run $rep: the $who plan: $sps samples/s; nodes' CPU $per_m s per M samples"
    echo "$who,$sps,$per_m" >>"$runs"
  done
done
/usr/bin/python3 - "$runs" "$root/bench/results/client_planning.csv" "$nodes" "$samples" "$size" "$world" "$batch" <<'EOF'
import csv, statistics, sys
runs, out, nodes, samples, size, world, batch = sys.argv[1:]
rows = list(csv.reader(open(runs)))
med = {w: (statistics.median(float(r[1]) for r in rows if r[0] == w),
           statistics.median(float(r[2]) for r in rows if r[0] == w)) for w in ("client", "nodes")}
for w in ("client", "nodes"):
    print(f"the {w} plan: median {med[w][0]:,.0f} samples/s, nodes' CPU {med[w][1]:.2f} s per M samples")
print(f"client planning / nodes planning: samples/s x{med['client'][0] / med['nodes'][0]:.2f}, "
      f"nodes' CPU per sample x{med['client'][1] / med['nodes'][1]:.2f}")
with open(out, "w") as f:
    f.write("planner,samples_per_s_median,nodes_cpu_s_per_M_samples_median,nodes,samples,size,world,batch\n")
    for w in ("client", "nodes"):
        f.write(f"{w},{med[w][0]:.0f},{med[w][1]:.2f},{nodes},{samples},{size},{world},{batch}\n")
EOF
