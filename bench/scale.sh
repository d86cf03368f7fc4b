#!/usr/bin/env bash
# The scale curve: for N nodes (default 1 2 4 8), each stratad in its own network
# namespace behind a veth link shaped with tc on the node's sending side (default:
# tbf at 400 mbit = 50 MB/s, under netem's 0.5 ms delay where the kernel has netem),
# the client in another namespace, all joined by a bridge in a hub namespace. Per N:
# a fresh cluster, PER-NODE-MB of samples per node ingested at R=1 in small shards
# (before the links are shaped, so every node holds data and the ingest is not what
# is measured), one warm-up epoch, then one measured epoch with strata-stream-probe
# from the client namespace. Prints N, the client's MB/s, N x link rate, their ratio
# (target >= 0.9), the ratio placement allows (mean / most samples on one node: at
# R=1 the fullest node finishes last), and each node's CPU seconds (utime+stime
# from /proc) per million samples it delivered, mean and worst node, its idle CPU
# (ms per second, over as long as an epoch takes, streaming nothing) and the mean net of it.
# The client plans its streams (the default); --plan-on-nodes has every node compute
# the whole plan instead, to compare the nodes' CPU (column `planning`).
# With --ingest, then (N >= 2, links shaped): the same tars ingested again at R=2,
# by one writer (one node sends every copy over its link) and by N writers
# (`strata ingest --writers N`, each node copying its own part); MB/s of each.
# Usage: bench/scale.sh [--nodes "1 2 4 8"] [--rate-mbit 400] [--delay-ms 0.5]
#          [--per-node-mb 192] [--size 64KiB] [--shard-size 256KiB] [--replication 1]
#          [--world 2] [--batch-size 64] [--plan-on-nodes] [--ingest]
# Needs root (ip netns, veth, tc) and a build in ./build. Writes bench/results/scale.csv
# (and scale_ingest.csv with --ingest).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="$root/build"
node_counts="1 2 4 8"
rate_mbit=400
delay_ms=0.5
per_node_mb=192
size=64KiB
world=2
batch=64
shard=256KiB
replication=1
ingest=0
planning=client
probe_extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) node_counts="$2"; shift 2 ;;
    --rate-mbit) rate_mbit="$2"; shift 2 ;;
    --delay-ms) delay_ms="$2"; shift 2 ;;
    --per-node-mb) per_node_mb="$2"; shift 2 ;;
    --size) size="$2"; shift 2 ;;
    --world) world="$2"; shift 2 ;;
    --batch-size) batch="$2"; shift 2 ;;
    --shard-size) shard="$2"; shift 2 ;;
    --replication) replication="$2"; shift 2 ;;
    --ingest) ingest=1; shift ;;
    --plan-on-nodes) planning=nodes; probe_extra=(--plan-on-nodes); shift ;;
    -h|--help) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "scale.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
for n in $node_counts; do
  [[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 200 ] || { echo "scale.sh: --nodes takes counts 1..200" >&2; exit 2; }
done
[[ "$rate_mbit" =~ ^[0-9]+$ ]] && [ "$rate_mbit" -ge 1 ] || { echo "scale.sh: --rate-mbit must be a positive integer" >&2; exit 2; }
[[ "$delay_ms" =~ ^[0-9]+(\.[0-9]+)?$ ]] || { echo "scale.sh: --delay-ms must be a number" >&2; exit 2; }
[[ "$per_node_mb" =~ ^[0-9]+$ ]] && [ "$per_node_mb" -ge 1 ] || { echo "scale.sh: --per-node-mb must be a positive integer" >&2; exit 2; }
if [ "$(id -u)" -ne 0 ]; then
  echo "scale.sh: needs root (it creates network namespaces, veth links and tc qdiscs)" >&2; exit 1
fi
if ! command -v ip >/dev/null || ! command -v tc >/dev/null; then
  echo "scale.sh: needs ip and tc (Debian: iproute2)" >&2; exit 1
fi
probe_ns="strata-scale-probe-$$"
if ! ip netns add "$probe_ns" 2>/dev/null; then
  echo "scale.sh: 'ip netns add' is not available here (no CAP_SYS_ADMIN, or no network namespaces)" >&2; exit 1
fi
ip netns del "$probe_ns"
for b in server/stratad client/strata bench/strata-stream-probe bench/strata-make-dataset; do
  [ -x "$bin/$b" ] || { echo "scale.sh: no $bin/$b (build first: deploy/local/build.sh)" >&2; exit 1; }
done
size_bytes=$(/usr/bin/python3 -c "
import re,sys
m=re.fullmatch(r'(\d+)(B|KiB|MiB)?','$size') or sys.exit('bad --size')
print(int(m[1])*{None:1,'B':1,'KiB':1024,'MiB':1<<20}[m[2]])")
per_node=$(( per_node_mb * 1000000 / size_bytes ))
[ "$per_node" -ge 1 ] || { echo "scale.sh: --per-node-mb is smaller than one sample" >&2; exit 2; }

# Names carry this shell's pid: two runs never share a namespace.
ns="sscale$$"
hub="$ns-hub"
client="$ns-cli"
work="$(mktemp -d /tmp/strata-scale-bench-XXXXXX)"
pids=()
namespaces=()
cleanup() {
  local rc=$? p n
  if [ "$rc" -ne 0 ]; then
    for n in "$work"/*.log; do [ -f "$n" ] && { echo "--- ${n##*/} (last lines)"; tail -n 5 "$n"; } >&2; done
  fi
  for p in ${pids[@]+"${pids[@]}"}; do kill "$p" 2>/dev/null || true; done
  for p in ${pids[@]+"${pids[@]}"}; do wait "$p" 2>/dev/null || true; done
  # Deleting a namespace deletes the veth ends in it, and with them their peers.
  for n in ${namespaces[@]+"${namespaces[@]}"}; do ip netns del "$n" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir -p "$root/bench/results"

net_add() {  # net_add NAME: a namespace with loopback up
  ip netns add "$1"
  namespaces+=("$1")
  ip -n "$1" link set lo up
}
# The hub and the client: 10.77.0.254 on the bridge, its own link not shaped.
net_add "$hub"
ip -n "$hub" link add br0 type bridge
ip -n "$hub" link set br0 up
net_add "$client"
ip link add eth0 netns "$client" type veth peer name cli netns "$hub"
ip -n "$hub" link set cli master br0 up
ip -n "$client" addr add 10.77.0.254/16 dev eth0
ip -n "$client" link set eth0 up

# node_ns I: node I's namespace; its link eth0 (node_ip I) on the bridge as nI.
node_ns() { echo "$ns-n$1"; }
node_ip() { echo "10.77.$(($1 / 200 + 1)).$(($1 % 200 + 1))"; }
add_node_net() {
  local i="$1" n
  n="$(node_ns "$i")"
  net_add "$n"
  ip link add eth0 netns "$n" type veth peer name "n$i" netns "$hub"
  ip -n "$hub" link set "n$i" master br0 up
  ip -n "$n" addr add "$(node_ip "$i")/16" dev eth0
  ip -n "$n" link set eth0 up
}
# Node I's sending side: a token bucket at the link rate, under netem's delay where
# the kernel has netem (sch_netem; some kernels, this bench's first host among them,
# are built without it: the run then says so and records delay 0).
netem=yes
if [ "$delay_ms" != 0 ]; then
  ip netns add "$ns-probe"; namespaces+=("$ns-probe")
  ip -n "$ns-probe" link add name pa type veth peer name pb
  tc -n "$ns-probe" qdisc add dev pa root netem delay 1ms 2>/dev/null || netem=""
  ip netns del "$ns-probe"; unset 'namespaces[-1]'
  if [ -z "$netem" ]; then
    echo "scale.sh: this kernel has no netem qdisc: links are rate-limited (tbf) but get no added delay" >&2
    delay_ms=0
  fi
fi
shape() {
  local n dev=(dev eth0)
  n="$(node_ns "$1")"
  if [ "$delay_ms" != 0 ]; then
    tc -n "$n" qdisc replace "${dev[@]}" root handle 1: netem delay "${delay_ms}ms" limit 10000
    tc -n "$n" qdisc add "${dev[@]}" parent 1:1 handle 10: tbf rate "${rate_mbit}mbit" burst 128kb latency 50ms
  else
    tc -n "$n" qdisc replace "${dev[@]}" root tbf rate "${rate_mbit}mbit" burst 128kb latency 50ms
  fi
}
del_node_net() {
  local n
  n="$(node_ns "$1")"
  ip netns del "$n" 2>/dev/null || true
  local keep=() x
  for x in "${namespaces[@]}"; do [ "$x" = "$n" ] || keep+=("$x"); done
  namespaces=("${keep[@]}")
}
cpu_ticks() {  # utime+stime of process $1, in clock ticks
  awk '{print $14 + $15}' "/proc/$1/stat"
}
served_by_node() {  # samples_served of node-1..node-$1, in that order
  in_client "$bin/client/strata" status --json --server "$servers" | /usr/bin/python3 -c '
import json,sys
by={(x or {}).get("node_id"): int((x or {}).get("samples_served",0)) for x in json.load(sys.stdin)["nodes"]}
print(" ".join(str(by.get(f"node-{i}",0)) for i in range(1,int(sys.argv[1])+1)))' "$1"
}
field() { grep -o "$1=[^ ]*" | cut -d= -f2; }
in_client() { ip netns exec "$client" "$@"; }

max_n=0
for n in $node_counts; do [ "$n" -gt "$max_n" ] && max_n=$n; done
echo "== data: $max_n x $per_node samples of $size (one tar per node's share)"
nice -n 19 "$bin/bench/strata-make-dataset" --out "$work/data" --format tar --samples $((max_n * per_node)) \
  --size "$size" --samples-per-tar "$per_node" >/dev/null
mapfile -t tars < <(find "$work/data" -name '*.tar' | sort)
hz=$(getconf CLK_TCK)
link_mb=$(/usr/bin/python3 -c "print(f'{$rate_mbit/8:.1f}')")
csv="$work/scale.csv"  # copied to bench/results/ once every N has run
ingest_csv="$work/scale_ingest.csv"
echo "nodes,one_writer_mb_per_s,n_writers_mb_per_s,ratio,rate_mbit,sample_size" >"$ingest_csv"
echo "nodes,client_mb_per_s,link_sum_mb_per_s,ratio,placement_bound,cpu_s_per_M_samples_mean,cpu_s_per_M_samples_worst,samples,samples_max_node,idle_cpu_ms_per_s,cpu_s_per_M_samples_net_mean,rate_mbit,delay_ms,sample_size,world,planning" >"$csv"

for n in $node_counts; do
  echo "== $n node(s): links of $rate_mbit mbit ($link_mb MB/s), $delay_ms ms"
  peers=""
  for i in $(seq 1 "$n"); do peers+="${peers:+,}node-$i=$(node_ip "$i"):7400"; done
  node_pids=()
  for i in $(seq 1 "$n"); do
    add_node_net "$i"
    ip netns exec "$(node_ns "$i")" "$bin/server/stratad" --node-id "node-$i" --listen "$(node_ip "$i"):7400" \
      --metrics-listen "" --insecure --data-dir "$work/n$n/node-$i" --peers "$peers" >"$work/n$n-node-$i.log" 2>&1 &
    pids+=($!); node_pids+=($!)
  done
  servers=""
  for i in $(seq 1 "$n"); do servers+="${servers:+,}$(node_ip "$i"):7400"; done
  up=0
  for _ in $(seq 300); do
    up=$(in_client "$bin/client/strata" status --json --server "$servers" 2>/dev/null |
      /usr/bin/python3 -c 'import json,sys; print(sum(x.get("state")=="NODE_UP" for x in json.load(sys.stdin)["map"]["nodes"]))' \
      2>/dev/null || echo 0)
    [ "$up" -eq "$n" ] && break
    for p in "${node_pids[@]}"; do kill -0 "$p" 2>/dev/null || break 2; done
    sleep 0.2
  done
  [ "$up" -eq "$n" ] || { echo "scale.sh: only $up of $n nodes up; node-1's log:" >&2; cat "$work/n$n-node-1.log" >&2; exit 1; }
  in_client "$bin/client/strata" ingest -q --server "$servers" --dataset scale --replication "$replication" --shard-size "$shard" \
    "${tars[@]:0:$n}" >/dev/null
  holders=$(in_client "$bin/client/strata" describe scale --shards --json --server "$servers" | /usr/bin/python3 -c '
import collections,json,sys
c=collections.Counter(h["node"] for s in json.load(sys.stdin)["shards"] for h in s["holders"])
print(" ".join(f"{k}:{v}" for k,v in sorted(c.items())))')
  echo "   shards per node: $holders"
  for i in $(seq 1 "$n"); do shape "$i"; done
  # Warm-up epoch: connections, page cache.
  out=$(in_client "$bin/bench/strata-stream-probe" --server "$servers" --dataset scale --world "$world" \
    --batch-size "$batch" --epoch 0 --stall-ms 10000 ${probe_extra[@]+"${probe_extra[@]}"})
  [ "$(echo "$out" | field exactly_once)" = yes ] || { echo "scale.sh: not exactly once: $out" >&2; exit 1; }
  # Idle: the nodes' CPU over as long as that epoch took, streaming nothing (heartbeats, timers).
  idle_s=$(echo "$out" | field seconds)
  idle0=(); for p in "${node_pids[@]}"; do idle0+=("$(cpu_ticks "$p")"); done
  sleep "$idle_s"
  idle1=(); for p in "${node_pids[@]}"; do idle1+=("$(cpu_ticks "$p")"); done
  served_before=$(served_by_node "$n")
  before=(); for p in "${node_pids[@]}"; do before+=("$(cpu_ticks "$p")"); done
  out=$(in_client "$bin/bench/strata-stream-probe" --server "$servers" --dataset scale --world "$world" \
    --batch-size "$batch" --epoch 1 --stall-ms 10000 ${probe_extra[@]+"${probe_extra[@]}"})
  after=(); for p in "${node_pids[@]}"; do after+=("$(cpu_ticks "$p")"); done
  [ "$(echo "$out" | field exactly_once)" = yes ] || { echo "scale.sh: not exactly once: $out" >&2; exit 1; }
  # A node counts a part once gRPC reports it written: wait for the counters to add up.
  samples=$(echo "$out" | field samples)
  served_after=""
  for _ in $(seq 50); do
    served_after=$(served_by_node "$n")
    /usr/bin/python3 -c "import sys; b='$served_before'.split(); a='$served_after'.split(); sys.exit(0 if sum(map(int,a))-sum(map(int,b))>=$samples else 1)" && break
    sleep 0.1
  done
  mbs=$(echo "$out" | field mb_per_s)
  read -r ratio bound cpu_mean cpu_worst max_node idle_ms cpu_net <<<"$(/usr/bin/python3 -c "
b=[int(x) for x in '$served_before'.split()]; a=[int(x) for x in '$served_after'.split()]
served=[y-x for x,y in zip(b,a)] if len(a)==len(b) else []
cpu=[(y-x)/$hz for x,y in zip([${before[*]/%/,}], [${after[*]/%/,}])]
# Per node: its CPU seconds per million samples it delivered.
per=[c/(s/1e6) for c,s in zip(cpu,served) if s>0] or [sum(cpu)/($samples/1e6)]
top=max(served) if served else $samples
idle=[(y-x)/$hz for x,y in zip([${idle0[*]/%/,}], [${idle1[*]/%/,}])]
# Net: less each node's idle CPU over the measured epoch's length.
net=[(c-i/$idle_s*$(echo "$out" | field seconds))/(s/1e6) for c,i,s in zip(cpu,idle,served) if s>0] or [0]
print(f'{$mbs/($n*$rate_mbit/8):.2f} {$samples/$n/top:.2f} {sum(per)/len(per):.1f} {max(per):.1f} {top}',
      f'{1000*sum(idle)/len(idle)/$idle_s:.1f} {sum(net)/len(net):.1f}')")"
  echo "   $mbs MB/s of $((n * rate_mbit / 8)) MB/s (x$ratio; placement allows x$bound); CPU s per M samples per node: mean $cpu_mean, worst $cpu_worst; most samples on one node: $max_node of $samples; idle CPU ${idle_ms} ms/s a node (net of it: $cpu_net)"
  echo "$n,$mbs,$(/usr/bin/python3 -c "print(f'{$n*$rate_mbit/8:.1f}')"),$ratio,$bound,$cpu_mean,$cpu_worst,$samples,$max_node,$idle_ms,$cpu_net,$rate_mbit,$delay_ms,$size,$world,$planning" >>"$csv"
  if [ "$ingest" = 1 ] && [ "$n" -ge 2 ]; then
    # Ingest through the shaped links: one writer, then N (the sources dealt out among them).
    rates=()
    for w in 1 "$n"; do
      extra=(); [ "$w" -gt 1 ] && extra=(--writers "$w")
      rate=$(in_client "$bin/client/strata" ingest -q --server "$servers" --dataset "ingest$w" --replication 2 \
        --shard-size "$shard" "${extra[@]}" "${tars[@]:0:$n}" | grep -oE '[0-9,.]+ MB/s' | tr -d ', MB/s')
      rates+=("$rate")
    done
    echo "   ingest at R=2: 1 writer ${rates[0]} MB/s, $n writers ${rates[1]} MB/s (x$(/usr/bin/python3 -c "print(f'{${rates[1]}/${rates[0]}:.2f}')"))"
    echo "$n,${rates[0]},${rates[1]},$(/usr/bin/python3 -c "print(f'{${rates[1]}/${rates[0]}:.2f}')"),$rate_mbit,$size" >>"$ingest_csv"
  fi
  for p in "${node_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${node_pids[@]}"; do wait "$p" 2>/dev/null || true; done
  for i in $(seq 1 "$n"); do del_node_net "$i"; done
  rm -rf "$work/n$n"
done
cp "$csv" "$root/bench/results/scale.csv"
if [ "$ingest" = 1 ]; then
  cp "$ingest_csv" "$root/bench/results/scale_ingest.csv"
  echo
  column -s, -t "$ingest_csv"
fi
echo
column -s, -t "$csv"
