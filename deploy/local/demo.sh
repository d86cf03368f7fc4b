#!/usr/bin/env bash
# The quick-start job: start stratad on loopback, generate a labelled dataset,
# ingest it, and stream three epochs into a small data-parallel training loop.
# Expects a build in ./build (deploy/local/build.sh makes one).
#
# Environment: STRATA_DEMO_DIR (default /tmp/strata-demo), STRATA_DEMO_PORT
# (gRPC port, default 7400; metrics on port + 2000), STRATA_DEMO_SAMPLES (20000).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
bin="$root/build"
dir="${STRATA_DEMO_DIR:-/tmp/strata-demo}"
port="${STRATA_DEMO_PORT:-7400}"
samples="${STRATA_DEMO_SAMPLES:-20000}"
server="127.0.0.1:$port"
strata="$bin/client/strata"

rm -rf "$dir"
mkdir -p "$dir"
pid=""
cleanup() { if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill -TERM "$pid"; wait "$pid" || true; fi; }
trap cleanup EXIT

step() { printf '\n== %s\n' "$*"; }

step "starting stratad on $server (data in $dir/node, log in $dir/stratad.log)"
"$bin/server/stratad" --listen "$server" --metrics-listen "127.0.0.1:$((port + 2000))" \
  --data-dir "$dir/node" --node-id node-1 >"$dir/stratad.log" 2>&1 &
pid=$!
for _ in $(seq 100); do grep -q "ready:" "$dir/stratad.log" && break; sleep 0.1; done
grep "ready:" "$dir/stratad.log" || { cat "$dir/stratad.log"; exit 1; }

step "generating $samples labelled samples (10 classes, Zipf-distributed: class09 is rare)"
"$bin/bench/strata-make-dataset" --out "$dir/dataset" --samples "$samples" --classes 10 --zipf 1.0 --size 1KiB

step "strata ingest --server $server --dataset demo $dir/dataset"
"$strata" ingest --server "$server" --dataset demo "$dir/dataset"

step "strata describe demo"
"$strata" describe --server "$server" demo

step "training: 2 ranks x batch 64, 3 epochs, batches streamed from stratad"
"$bin/client/strata-train-example" --server "$server" --dataset demo --world 2 --batch-size 64 --epochs 3

step "strata status"
"$strata" status --server "$server"

step "stopping stratad (SIGTERM drains and exits 0)"
kill -TERM "$pid"
wait "$pid"
echo "stratad exited with status $?"
pid=""
printf '\nDone. The dataset, the node'"'"'s data directory and its log are in %s.\n' "$dir"
