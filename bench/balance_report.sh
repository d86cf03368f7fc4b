#!/usr/bin/env bash
# The balance report on three adversarial distributions, strata's stratified
# sampler beside torch's DistributedSampler(shuffle=True) over the same labels:
#   rare       one class at 0.05% of 100,000 samples among nine common ones
#   zipf1000   1000 classes with Zipf sizes (class k ~ 20000/(k+1); 149,227 samples)
#   source99   two sources at 99% / 1% of 50,000 samples (stratified by source)
# Usage: bench/balance_report.sh [--build DIR] [--plots DIR]
# Needs a build (default ./build); starts its own stratad on loopback.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="$root/build"
plots=""
while [ $# -gt 0 ]; do
  case "$1" in
    --build) bin="$2"; shift 2 ;;
    --plots) plots="$2"; shift 2 ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
work="$(mktemp -d /tmp/strata-balance-XXXXXX)"
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
port=$((20000 + RANDOM % 20000))
"$bin/server/stratad" --listen 127.0.0.1:$port --metrics-listen "" --data-dir "$work/node" >"$work/stratad.log" 2>&1 &
pid=$!
for _ in $(seq 100); do grep -q "ready:" "$work/stratad.log" && break; sleep 0.1; done
server=(--server 127.0.0.1:$port)

# JSONL manifests whose rows share one small payload file: only labels matter here.
/usr/bin/python3 - "$work" <<'PY'
import json, random, sys
work = sys.argv[1]
open(f"{work}/x.bin", "wb").write(b"x" * 32)
def write(name, rows):
    random.Random(7).shuffle(rows)
    with open(f"{work}/{name}.jsonl", "w") as f:
        for row in rows:
            f.write(json.dumps(dict(path="x.bin", **row)) + "\n")
rare = [("rare", 50)] + [(f"class{k}", c) for k, c in
        enumerate([20000, 15000, 15000, 12000, 10000, 10000, 8000, 5000, 4950])]
write("rare", [{"label": l} for l, c in rare for _ in range(c)])
write("zipf1000", [{"label": f"c{k:04d}"} for k in range(1000) for _ in range(20000 // (k + 1))])
write("source99", [{"label": f"class{i % 10}", "source": "camera" if i < 49500 else "web"} for i in range(50000)])
PY

report() {  # name, stratify-by, world, batch, extra flags...
  local name=$1 by=$2 world=$3 batch=$4; shift 4
  "$bin/client/strata" ingest "${server[@]}" --dataset "$name" --stratify-by "$by" -q "$work/$name.jsonl" >/dev/null
  local plot=()
  [ -n "$plots" ] && mkdir -p "$plots" && plot=(--plot "$plots/$name.png")
  echo "\$ strata stream --dataset $name --sampler stratified --world $world --batch-size $batch --seed 1 --report $*"
  "$bin/client/strata" stream "${server[@]}" --dataset "$name" --sampler stratified --world "$world" \
    --batch-size "$batch" --seed 1 --report "${plot[@]}" "$@"
  echo
}
report rare label 8 32
report zipf1000 label 8 32
report source99 source 4 25
