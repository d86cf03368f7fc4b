#!/usr/bin/env bash
# The PyTorch example end to end: a local stratad on a free port, a generated
# dataset (bench/tools/make_dataset.cc) ingested with the CLI, then
# ddp_train.py on 2 gloo processes, interrupted mid-epoch and resumed from its
# checkpoint. Exits non-zero unless every epoch delivered every sample once.
#
# Usage: client/examples/run_ddp_example.sh [--build DIR] [--samples N] [-- ddp_train.py args...]
# Binaries come from DIR (default ./build); STRATA_STRATAD, STRATA_CLI,
# STRATA_MAKE_DATASET and PYTHONPATH override (ctest sets them).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$root/build"
samples=4000
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build="$(cd "$2" && pwd)"; shift 2 ;;
    --samples) samples="$2"; shift 2 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
stratad="${STRATA_STRATAD:-$build/server/stratad}"
cli="${STRATA_CLI:-$build/client/strata}"
make_dataset="${STRATA_MAKE_DATASET:-$build/bench/strata-make-dataset}"
export PYTHONPATH="${PYTHONPATH:-$build/client/python}"

work="$(mktemp -d "${TMPDIR:-/tmp}/strata-ddp-XXXXXX")"
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

: >"$work/stratad.log"  # exists before the first look at it
"$stratad" --data-dir "$work/node" --listen 127.0.0.1:0 --metrics-listen "" >"$work/stratad.log" 2>&1 &
pid=$!
server=""
for _ in $(seq 200); do
  server="$(sed -nE 's/.*ready: grpc=([^ ]+).*/\1/p' "$work/stratad.log" | head -1)"
  [ -n "$server" ] && break
  kill -0 "$pid" 2>/dev/null || { cat "$work/stratad.log" >&2; exit 1; }
  sleep 0.1
done
[ -n "$server" ] || { echo "stratad did not become ready" >&2; cat "$work/stratad.log" >&2; exit 1; }
echo "stratad on $server"

"$make_dataset" --out "$work/images" --format folder --samples "$samples" --size 256 --classes 10
"$cli" ingest --server "$server" --dataset ddp-demo "$work/images" 2>/dev/null | tail -1

/usr/bin/python3 "$root/client/examples/ddp_train.py" --server "$server" --dataset ddp-demo \
  --world 2 --batch-size 32 --epochs 2 --interrupt-at 0:20 --checkpoint-dir "$work/checkpoints" "$@"

kill -TERM "$pid"
wait "$pid"
pid=""
