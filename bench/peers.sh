#!/usr/bin/env bash
# strata against its peers, measured in one run on loopback:
#   limit  iperf3's loopback TCP throughput;
#   peer 1 nginx serving the dataset as WebDataset tar shards over HTTP, read in
#          full by curl (two transfers at a time, like two loader workers);
#   peer 2 PyTorch's DataLoader + DistributedSampler (shuffle, 2 workers)
#          reading the same samples stored one file per sample;
#   strata shuffled and stratified batches from 1 node, shuffled from 3 nodes
#          (one copy of each shard, so every step is joined from three nodes'
#          parts; and, for the 1 KiB set, three copies, a 3-node cluster's
#          default, where each step comes whole from one node).
# For small samples (1 KiB) and large ones (1 MiB), then the scale figures:
# 1, 4 and 16 concurrent client streams with the server's peak memory, and the
# cost by dataset size (10k, 1M, 10M samples): ingest rate, shard bytes, time
# to a first batch on a freshly started server (shard files in the page cache,
# and out of it where the script runs as root), stream rate and the server's
# memory.
# Every dataset of the peer runs is read once before it is timed, so all systems read from the
# page cache. Each strata figure is the best of three runs; peers get one run
# each (their runs are long enough to be steady).
#
# Usage: bench/peers.sh [--small N] [--large N] [--big N] [--skip-scale] [--scale-budget SIZE]
#   --small N   1 KiB samples (default 300000)
#   --large N   1 MiB samples (default 2000, about 2 GB)
#   --big N     samples of the largest dataset for the cost by size (default 10000000)
#   --scale-budget SIZE the server's memory_budget (whole RSS) for the scale runs (default 96MiB)
# Needs a build in ./build, nginx, iperf3, curl, /usr/bin/python3 with torch
# and matplotlib (deploy/setup-debian.sh installs them). Writes
# bench/results/peers.csv and bench/results/peers.png.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="$root/build"
small=300000
large=2000
big=10000000
scale=1
scale_budget=96MiB
while [ $# -gt 0 ]; do
  case "$1" in
    --small) small="$2"; shift 2 ;;
    --large) large="$2"; shift 2 ;;
    --big) big="$2"; shift 2 ;;
    --skip-scale) scale=0; shift ;;
    --scale-budget) scale_budget="$2"; shift 2 ;;
    -h|--help) sed -n '2,29p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "peers.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
for tool in nginx iperf3 curl; do
  command -v "$tool" >/dev/null || [ -x "/usr/sbin/$tool" ] ||
    { echo "peers.sh: $tool is missing; run deploy/setup-debian.sh" >&2; exit 2; }
done
[ -x "$bin/client/strata" ] || { echo "peers.sh: no build in $bin; run deploy/local/build.sh" >&2; exit 2; }
# The cost-by-size runs write the largest set's tar sources (about 2,000 bytes
# a sample) while the node refuses ingests below its disk_low_watermark (5% of
# the file system): fail now rather than after the peer runs.
if [ "$scale" = 1 ]; then
  read -r fs_size fs_avail < <(df --output=size,avail -B1 /tmp | tail -1)
  need=$((big * 2000 + fs_size / 20))
  if [ "$fs_avail" -lt "$need" ]; then
    echo "peers.sh: /tmp has $((fs_avail >> 30)) GiB free; the $big-sample set needs at least $((need >> 30)) GiB" \
      "(its tar sources and the node's 5% disk_low_watermark). Free space, or pass --big N or --skip-scale" >&2
    exit 2
  fi
fi
py=/usr/bin/python3
strata="$bin/client/strata"
cluster="$root/deploy/local/cluster.sh"
work="$(mktemp -d /tmp/strata-peers-XXXXXX)"
chmod 755 "$work"  # nginx workers run as another user
pids=()
cleanup() {
  for d in one three scale first; do "$cluster" stop --dir "$work/$d" >/dev/null 2>&1 || true; done
  [ -f "$work/nginx.pid" ] && kill "$(cat "$work/nginx.pid")" 2>/dev/null || true
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$root/bench/results"
csv="$root/bench/results/peers.csv"
echo "size,system,samples,seconds,samples_per_s,gb_per_s,strata_vs_this,vs_iperf3,notes" >"$csv"
base=$((21000 + RANDOM % 10000))
now() { date +%s.%N; }
calc() { "$py" -c "print($1)"; }
rate() {  # strata stream's summary -> "samples/s MB/s"
  grep -oE '[0-9,.]+ samples/s, [0-9,.]+ MB/s' | head -1 | sed -E 's/,//g; s/ samples\/s//; s/ MB\/s//'
}
row() {  # size system samples seconds samples/s GB/s
  echo "$1,$2,$3,$4,$5,$6,,," >>"$csv"
  printf '  %-34s %12s samples/s %8s GB/s\n' "$2" "$5" "$6"
}

echo "== limit: iperf3 loopback TCP (5 s)"
iperf3 -s -p $((base + 90)) -1 >/dev/null 2>&1 &
pids+=($!)
# The server listens once it has started (a fixed pause lost the race once).
for _ in $(seq 50); do
  ss -ltn "sport = :$((base + 90))" | grep -q LISTEN && break
  sleep 0.1
done
iperf_gbs=$(iperf3 -c 127.0.0.1 -p $((base + 90)) -t 5 -J |
  "$py" -c 'import json,sys; bps = json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]; print(f"{bps/8e9:.3f}")')
echo "  iperf3: $iperf_gbs GB/s"
echo "any,iperf3,,,,$iperf_gbs,,," >>"$csv"

cat >"$work/nginx.conf" <<EOF
daemon on;
worker_processes 2;
pid $work/nginx.pid;
error_log $work/nginx.err;
events { worker_connections 64; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  server { listen 127.0.0.1:$((base + 91)); root $work/www; }
}
EOF
mkdir -p "$work/www"
nginx_bin=$(command -v nginx || echo /usr/sbin/nginx)
"$nginx_bin" -c "$work/nginx.conf" -p "$work" -e "$work/nginx.err" 2>/dev/null ||
  "$nginx_bin" -c "$work/nginx.conf" -p "$work"

"$cluster" start --nodes 1 --base-port "$base" --dir "$work/one" >/dev/null
"$cluster" start --nodes 3 --base-port $((base + 10)) --dir "$work/three" >/dev/null
three="127.0.0.1:$((base + 10)),127.0.0.1:$((base + 11)),127.0.0.1:$((base + 12))"

best_stream() {  # servers dataset batch [stream args...] -> "samples/s MB/s", best of 3
  local servers=$1 ds=$2 batch=$3; shift 3
  local best_s=0 best_m=0 s m
  for _ in 1 2 3; do
    read -r s m <<<"$("$strata" stream --server "$servers" --dataset "$ds" --batch-size "$batch" --quiet "$@" | rate)"
    if [ "$(calc "int($m > $best_m)")" = 1 ]; then best_s=$s; best_m=$m; fi
  done
  echo "$best_s $best_m"
}

for kind in small large; do
  if [ $kind = small ]; then n=$small; size=1KiB; batch=256; per_tar=10000
  else n=$large; size=1MiB; batch=8; per_tar=100; fi
  echo "== $kind: $n samples of $size"
  "$bin/bench/strata-make-dataset" --out "$work/www/$kind" --format tar --samples "$n" --size $size \
    --samples-per-tar $per_tar --classes 10 >/dev/null 2>&1
  "$bin/bench/strata-make-dataset" --out "$work/files-$kind" --format folder --samples "$n" --size $size \
    --classes 10 >/dev/null 2>&1
  "$strata" ingest -q --server 127.0.0.1:$base --dataset $kind "$work/www/$kind"/*.tar >/dev/null
  "$strata" ingest -q --server 127.0.0.1:$((base + 10)) --dataset $kind --replication 1 \
    "$work/www/$kind"/*.tar >/dev/null
  copies=()  # three copies of the 2 GB set would hold 6 GB more through the cost-by-size runs
  if [ $kind = small ]; then
    "$strata" ingest -q --server 127.0.0.1:$((base + 10)) --dataset ${kind}3 "$work/www/$kind"/*.tar >/dev/null
    "$strata" stream --server "$three" --dataset ${kind}3 --batch-size $batch --quiet >/dev/null
    copies=("strata_3_nodes_3_copies_shuffle|$three|${kind}3|")
  fi
  # Warm the page cache for every system.
  cat "$work/www/$kind"/*.tar >/dev/null
  find "$work/files-$kind" -type f -print0 | xargs -0 cat >/dev/null
  # Write back what making the sets dirtied now: the kernel's writeback, 30 s
  # later, once fell on whichever system was being timed.
  sync
  "$strata" stream --server 127.0.0.1:$base --dataset $kind --batch-size $batch --quiet >/dev/null
  "$strata" stream --server "$three" --dataset $kind --batch-size $batch --quiet >/dev/null
  bytes=$(calc "$n * (1024 if '$kind' == 'small' else 1048576)")

  # peer 1: nginx + curl, two transfers at a time
  t0=$(now)
  (cd "$work/www" && ls $kind/*.tar) |
    xargs -P 2 -I{} curl -sf -o /dev/null "http://127.0.0.1:$((base + 91))/{}"
  t1=$(now)
  secs=$(calc "round($t1 - $t0, 3)")
  row $kind nginx_webdataset "$n" "$secs" "$(calc "round($n / $secs)")" "$(calc "round($bytes / $secs / 1e9, 3)")"

  # peer 2: DataLoader + DistributedSampler, one file per sample
  out=$("$py" "$root/bench/dataloader_peer.py" "$work/files-$kind" --batch-size $batch --workers 2)
  dl_secs=$(echo "$out" | grep -o 'seconds=[^ ]*' | cut -d= -f2)
  dl_sps=$(echo "$out" | grep -o 'samples_per_s=[^ ]*' | cut -d= -f2)
  dl_mbs=$(echo "$out" | grep -o 'mb_per_s=[^ ]*' | cut -d= -f2)
  row $kind pytorch_dataloader "$n" "$dl_secs" "$dl_sps" "$(calc "round($dl_mbs / 1000, 3)")"

  for spec in "strata_1_node_shuffle|127.0.0.1:$base|$kind|" \
              "strata_1_node_stratified|127.0.0.1:$base|$kind|--sampler stratified" \
              "strata_3_nodes_shuffle|$three|$kind|" "${copies[@]}"; do
    IFS='|' read -r name servers ds extra <<<"$spec"
    # shellcheck disable=SC2086
    read -r s m <<<"$(best_stream "$servers" $ds $batch $extra)"
    row $kind "$name" "$n" "$(calc "round($n / $s, 3)")" "$s" "$(calc "round($m / 1000, 3)")"
  done
  find "$work/files-$kind" -delete
done

if [ $scale = 1 ]; then
  echo "== scale: 1, 4 and 16 concurrent streams of the small dataset from one node, memory_budget $scale_budget"
  # A fresh server with a memory budget for its whole RSS (the block cache gives way to the
  # rest), so that its peak memory is the streams' alone; sampled every 10 ms.
  "$cluster" stop --dir "$work/one" >/dev/null
  "$cluster" start --nodes 1 --base-port "$base" --dir "$work/one" -- --memory-budget "$scale_budget" >/dev/null
  pid=$(cat "$work/one/node-1.pid")
  for k in 1 4 16; do
    peak_anon=0
    peak_rss=0
    t0=$(now)
    spids=()
    for r in $(seq 0 $((k - 1))); do
      "$strata" stream --server 127.0.0.1:$base --dataset small --batch-size 256 --world $k --rank $r \
        --quiet >/dev/null &
      spids+=($!)
    done
    while kill -0 "${spids[@]}" 2>/dev/null; do
      a=$(awk '/RssAnon/ {print $2}' /proc/"$pid"/status)
      v=$(awk '/VmRSS/ {print $2}' /proc/"$pid"/status)
      [ "$a" -gt "$peak_anon" ] && peak_anon=$a
      [ "$v" -gt "$peak_rss" ] && peak_rss=$v
      sleep 0.01
    done
    wait "${spids[@]}"
    t1=$(now)
    secs=$(calc "round($t1 - $t0, 3)")
    sps=$(calc "round($small / $secs)")
    printf '  %2d streams: %10s samples/s   server RSS peak %6.1f MiB of %s (anonymous %6.1f MiB)\n' \
      $k "$sps" "$(calc "$peak_rss / 1024")" "$scale_budget" "$(calc "$peak_anon / 1024")"
    echo "small,strata_${k}_streams,$small,$secs,$sps,$(calc "round($small * 1024 / $secs / 1e9, 3)"),,,rss_mib=$(calc "round($peak_rss / 1024, 1)");anon_rss_mib=$(calc "round($peak_anon / 1024, 1)");memory_budget=$scale_budget" >>"$csv"
  done

  echo "== cost by dataset size: 10k, 1M and $big samples (16 B each) on one node"
  # Per size: ingest rate, shard bytes, time to a first batch, the stream rate over the
  # first min(N, 1M) samples, and the server's memory afterwards.
  # The time to a first batch is a fresh `strata stream --max-steps 1` (batch 256,
  # the client's whole wall time: start, connect, plan, one batch) against a server
  # restarted just before, so the stream opens the version, its shard files and (for
  # stratified) its stratum index; "second" is the next stream, with all of that open.
  # Each figure is the median of five fresh servers.
  # It is taken with the version's files in the page cache ("storage warm": they are
  # read once first) and, where this script may drop the page cache (root), out of it
  # ("storage cold": after the drop, one step of a small dataset pages the server's
  # and the client's code back in). The page cache is set explicitly because making
  # the 10M set's sources (20 GB of tar files) evicts other files unevenly.
  first="127.0.0.1:$((base + 20))"
  "$cluster" start --nodes 1 --base-port $((base + 20)) --dir "$work/first" >/dev/null
  "$bin/bench/strata-make-dataset" --out "$work/warmup" --format tar --samples 1000 --size 16 --classes 10 \
    >/dev/null 2>&1
  "$strata" ingest -q --server "$first" --dataset warmup "$work/warmup"/*.tar >/dev/null
  can_drop=0
  [ -w /proc/sys/vm/drop_caches ] && can_drop=1
  [ $can_drop = 1 ] || echo "  (not root: the page cache cannot be dropped; no storage-cold figures)"
  fresh_server() {  # storage: warm or cold
    "$cluster" stop --dir "$work/first" >/dev/null
    if [ "$2" = cold ]; then
      sync
      echo 3 >/proc/sys/vm/drop_caches
    else
      cat "$work/first/node-1/shards/first$1"/*/* >/dev/null
    fi
    "$cluster" restart --node 1 --dir "$work/first" >/dev/null
    "$strata" stream --server "$first" --dataset warmup --batch-size 256 --max-steps 1 --quiet >/dev/null
  }
  stream_ms() {  # n sampler -> the wall time of one `strata stream --max-steps 1`, in ms
    local t0 t1
    t0=$(now)
    "$strata" stream --server "$first" --dataset "first$1" --batch-size 256 --max-steps 1 --sampler "$2" \
      --quiet >/dev/null
    t1=$(now)
    calc "round(($t1 - $t0) * 1000, 1)"
  }
  first_batch() {  # n sampler storage: the median of five fresh servers, first and second stream
    local firsts=() seconds=() i
    for i in 1 2 3 4 5; do
      fresh_server "$1" "$3"
      firsts+=("$(stream_ms "$1" "$2")")
      seconds+=("$(stream_ms "$1" "$2")")
    done
    local f s
    f=$(IFS=,; calc "sorted([${firsts[*]}])[2]")
    s=$(IFS=,; calc "sorted([${seconds[*]}])[2]")
    echo "  $1 samples, $2, storage $3: first batch after $f ms (runs: ${firsts[*]}), second stream $s ms"
    echo "tiny,first_batch_${2}_storage_${3}_first_$1,$1,$(calc "round($f / 1000, 4)"),,,,,runs_ms=${firsts[*]}" >>"$csv"
    echo "tiny,first_batch_${2}_storage_${3}_second_$1,$1,$(calc "round($s / 1000, 4)"),,,,,runs_ms=${seconds[*]}" >>"$csv"
  }
  for n in $(printf "%s\n" 10000 1000000 "$big" | sort -nu); do
    "$bin/bench/strata-make-dataset" --out "$work/first-$n" --format tar --samples "$n" --size 16 \
      --samples-per-tar 1000000 --classes 100 >/dev/null 2>&1
    t0=$(now)
    "$strata" ingest -q --server "$first" --dataset "first$n" "$work/first-$n"/*.tar >/dev/null
    t1=$(now)
    ingest_secs=$(calc "round($t1 - $t0, 3)")
    shard_mib=$(du -sm "$work/first/node-1/shards/first$n" | cut -f1)
    echo "  $n samples: ingest $ingest_secs s ($(calc "round($n / ($t1 - $t0))") samples/s), $shard_mib MiB of shards"
    echo "tiny,ingest_$n,$n,$ingest_secs,$(calc "round($n / ($t1 - $t0))"),,,,shard_mib=$shard_mib" >>"$csv"
    rm -rf "$work/first-$n"
    for sampler in shuffle stratified; do
      first_batch "$n" $sampler warm
      if [ $can_drop = 1 ]; then first_batch "$n" $sampler cold; fi
    done
    m=$((n < 1000000 ? n : 1000000))
    cat "$work/first/node-1/shards/first$n"/*/* >/dev/null  # the stream rate from the page cache
    read -r sps mbs <<<"$("$strata" stream --server "$first" --dataset "first$n" --batch-size 256 \
      --max-steps $(((m + 255) / 256)) --quiet | rate)"
    fpid=$(cat "$work/first/node-1.pid")
    rss=$(awk '/VmRSS/ {print $2}' /proc/"$fpid"/status)
    anon=$(awk '/RssAnon/ {print $2}' /proc/"$fpid"/status)
    echo "  $n samples: shuffled stream of the first $m samples at $sps samples/s; server RSS $(calc "round($rss / 1024, 1)") MiB (anonymous $(calc "round($anon / 1024, 1)") MiB)"
    echo "tiny,stream_first_${m}_of_$n,$m,$(calc "round($m / $sps, 3)"),$sps,,,,rss_mib=$(calc "round($rss / 1024, 1)");anon_rss_mib=$(calc "round($anon / 1024, 1)")" >>"$csv"
  done
fi

echo "== ratios"
"$py" - "$csv" "$root/bench/results/peers.png" <<'EOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
iperf = float(next(r["gb_per_s"] for r in rows if r["system"] == "iperf3"))
by = {(r["size"], r["system"]): r for r in rows}
for r in rows:
    if r["size"] in ("small", "large") and r["system"].startswith("strata_") and r["gb_per_s"]:
        r["vs_iperf3"] = f"{float(r['gb_per_s']) / iperf:.2f}"
for size in ("small", "large"):
    strata = by.get((size, "strata_1_node_shuffle"))
    if not strata:
        continue
    for peer in ("nginx_webdataset", "pytorch_dataloader"):
        p = by.get((size, peer))
        if p:
            p["strata_vs_this"] = f"{float(strata['samples_per_s']) / float(p['samples_per_s']):.2f}"
with open(sys.argv[1], "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
    w.writeheader()
    w.writerows(rows)
print(f"{'size':6} {'system':32} {'samples/s':>12} {'GB/s':>7} {'strata 1 node/this':>19} {'vs iperf3':>9}")
for r in rows:
    if r["size"] in ("small", "large") and "streams" not in r["system"]:
        print(f"{r['size']:6} {r['system']:32} {r['samples_per_s']:>12} {r['gb_per_s']:>7} "
              f"{r['strata_vs_this']:>19} {r['vs_iperf3']:>9}")
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print("matplotlib is missing: no chart")
    sys.exit(0)
systems = ["nginx_webdataset", "pytorch_dataloader", "strata_1_node_shuffle", "strata_1_node_stratified",
           "strata_3_nodes_shuffle", "strata_3_nodes_3_copies_shuffle"]
fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
for ax, size, unit in ((axes[0], "small", "samples_per_s"), (axes[1], "large", "gb_per_s")):
    names = [s for s in systems if (size, s) in by]
    vals = [float(by[(size, s)][unit]) for s in names]
    ax.bar(range(len(names)), vals, color=["#999", "#999", "#2a7", "#2a7", "#2a7", "#2a7"][:len(names)])
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels([s.replace("_", "\n", 1) for s in names], fontsize=8)
    if unit == "gb_per_s":
        ax.axhline(iperf, color="r", linestyle="--", label=f"iperf3 loopback {iperf:.2f} GB/s")
        ax.legend(fontsize=8)
        ax.set_ylabel("GB/s")
        ax.set_title("1 MiB samples")
    else:
        ax.set_ylabel("samples/s")
        ax.set_title("1 KiB samples")
fig.suptitle("strata and its peers on loopback, one run (bench/peers.sh)")
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=100)
print(f"wrote {sys.argv[1]} and {sys.argv[2]}")
EOF
