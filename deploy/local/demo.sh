#!/usr/bin/env bash
# The quick-start job: a 3-node strata cluster on loopback
# (deploy/local/cluster.sh), a generated labelled dataset ingested with two
# copies of every shard, and three epochs of data-parallel training streamed
# from the cluster. During the second epoch one node is killed with kill -9:
# its share moves to the other replicas and every sample still arrives exactly
# once. Expects a build in ./build (deploy/local/build.sh makes one).
#
# Environment: STRATA_DEMO_DIR (default /tmp/strata-demo), STRATA_DEMO_PORT
# (first gRPC port, default 7400; metrics from port + 100), STRATA_DEMO_SAMPLES (20000).
set -euo pipefail
case "${1:-}" in -h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;; esac
root="$(cd "$(dirname "$0")/../.." && pwd)"
bin="$root/build"
dir="${STRATA_DEMO_DIR:-/tmp/strata-demo}"
port="${STRATA_DEMO_PORT:-7400}"
samples="${STRATA_DEMO_SAMPLES:-20000}"
servers="127.0.0.1:$port,127.0.0.1:$((port + 1)),127.0.0.1:$((port + 2))"
strata="$bin/client/strata"

"$root/deploy/local/cluster.sh" stop --dir "$dir" >/dev/null 2>&1 || true
rm -rf "$dir"
mkdir -p "$dir"
cleanup() { "$root/deploy/local/cluster.sh" stop --dir "$dir" >/dev/null 2>&1 || true; }
trap cleanup EXIT

step() { printf '\n== %s\n' "$*"; }

# The three nodes share this machine's disk. The default watermarks are
# shares of it (5% and 10% free): on a nearly full laptop they would count
# every node full. The demo keeps 512 MiB free instead; it writes ~60 MiB.
watermarks=(--disk-low-watermark 256MiB --disk-high-watermark 512MiB)
step "starting a 3-node cluster: deploy/local/cluster.sh start --nodes 3 --base-port $port --dir $dir -- ${watermarks[*]}"
"$root/deploy/local/cluster.sh" start --nodes 3 --base-port "$port" --dir "$dir" -- "${watermarks[@]}"

step "generating $samples labelled samples (10 classes, Zipf-distributed: class09 is rare)"
"$bin/bench/strata-make-dataset" --out "$dir/dataset" --samples "$samples" --classes 10 --zipf 1.0 --size 1KiB

step "strata ingest --server 127.0.0.1:$port --dataset demo --replication 2 $dir/dataset"
"$strata" ingest --server "127.0.0.1:$port" --dataset demo --replication 2 --shard-size 1MiB "$dir/dataset"

step "strata status (nodes, replica health, repair progress)"
"$strata" status --server "127.0.0.1:$port"

step "training: 2 ranks x batch 64, 3 epochs, batches from all three nodes; node-3 is killed (kill -9) during epoch 1"
"$bin/client/strata-train-example" --server "$servers" --dataset demo --world 2 --batch-size 64 --epochs 3 \
  --kill-during-epoch 1 --kill-pid "$(cat "$dir/node-3.pid")"

step "strata status after the failure"
"$strata" status --server "127.0.0.1:$port" | sed -n '/^cluster/,$p'

step "stopping the cluster (SIGTERM drains and exits 0)"
"$root/deploy/local/cluster.sh" stop --dir "$dir"
printf '\nDone. The dataset, the nodes'"'"' data directories and their logs are in %s.\n' "$dir"
