#!/usr/bin/env bash
# Soak: epochs streamed in a loop for N minutes from a local cluster while a
# nemesis kills a random node with kill -9 and restarts it (never more than
# one down at a time), and the consumer spends a long pause on some steps.
# Prints, per epoch and in total: samples delivered, lost, duplicated,
# failovers, stalls, readmissions and stream aborts. Target: 0 lost,
# 0 duplicated, 0 aborts.
#
#   bench/soak.sh [--minutes N] [--nodes 5] [--replication 3] [--world 4]
#                 [--samples 20000] [--sample-size 4KiB] [--batch-size 16]
#                 [--step-ms 20] [--slow-every 50] [--slow-ms 8000]
#                 [--down-s 2] [--up-s 6] [--base-port 7600] [--dir DIR]
#
# Builds nothing: expects build/ (deploy/local/build.sh). Exit status 1 if any
# sample was lost or duplicated or any stream aborted.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="$root/build"
minutes=5; nodes=5; replication=3; world=4; samples=20000; size=4KiB; batch=16
step_ms=20; slow_every=50; slow_ms=8000; down_s=2; up_s=6; base=7600; dir=""
usage() { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-2}"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --minutes) minutes="$2"; shift 2 ;;
    --nodes) nodes="$2"; shift 2 ;;
    --replication) replication="$2"; shift 2 ;;
    --world) world="$2"; shift 2 ;;
    --samples) samples="$2"; shift 2 ;;
    --sample-size) size="$2"; shift 2 ;;
    --batch-size) batch="$2"; shift 2 ;;
    --step-ms) step_ms="$2"; shift 2 ;;
    --slow-every) slow_every="$2"; shift 2 ;;
    --slow-ms) slow_ms="$2"; shift 2 ;;
    --down-s) down_s="$2"; shift 2 ;;
    --up-s) up_s="$2"; shift 2 ;;
    --base-port) base="$2"; shift 2 ;;
    --dir) dir="$2"; shift 2 ;;
    -h|--help) usage 0 ;;
    *) echo "soak.sh: unknown argument $1" >&2; usage ;;
  esac
done
for b in server/stratad client/strata bench/strata-stream-probe bench/strata-make-dataset; do
  [ -x "$bin/$b" ] || { echo "soak.sh: $bin/$b is missing; run deploy/local/build.sh" >&2; exit 2; }
done
[ -n "$dir" ] || dir="$(mktemp -d /tmp/strata-soak.XXXXXX)"
cluster="$root/deploy/local/cluster.sh"
servers=""
for i in $(seq 1 "$nodes"); do servers+="${servers:+,}127.0.0.1:$((base + i - 1))"; done

nemesis_pid=""
cleanup() {
  [ -n "$nemesis_pid" ] && kill "$nemesis_pid" 2>/dev/null && wait "$nemesis_pid" 2>/dev/null || true
  "$cluster" stop --dir "$dir/cluster" >/dev/null 2>&1 || true
}
trap cleanup EXIT

echo "soak: $nodes nodes, R=$replication, $world ranks, $samples samples of $size, ${minutes} min, in $dir"
"$cluster" start --nodes "$nodes" --base-port "$base" --metrics-base-port $((base + 100)) --dir "$dir/cluster" \
  >/dev/null
"$bin/bench/strata-make-dataset" --out "$dir/data" --format tar --samples "$samples" --size "$size" >/dev/null
# The ingest needs R nodes up in the home's map: retry while the nodes find each other.
for attempt in $(seq 1 30); do
  if "$bin/client/strata" ingest -q --server "$servers" --dataset soak --replication "$replication" \
       "$dir/data"/*.tar >/dev/null 2>"$dir/ingest.err"; then
    break
  fi
  [ "$attempt" -lt 30 ] || { echo "soak.sh: the ingest failed: $(cat "$dir/ingest.err")" >&2; exit 1; }
  sleep 1
done

# The nemesis: a random node killed with kill -9, restarted down_s later, then
# up_s of quiet; one node down at a time.
(
  while true; do
    sleep "$up_s"
    i=$((RANDOM % nodes + 1))
    pid=$(cat "$dir/cluster/node-$i.pid" 2>/dev/null || true)
    [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null || true
    echo "$(date +%T) nemesis: kill -9 node-$i" >>"$dir/nemesis.log"
    sleep "$down_s"
    "$cluster" restart --node "$i" --dir "$dir/cluster" >>"$dir/nemesis.log" 2>&1 || true
  done
) &
nemesis_pid=$!

end=$(( $(date +%s) + minutes * 60 ))
epoch=0; delivered=0; lost=0; duplicated=0; failovers=0; stalls=0; readmissions=0; aborts=0
while [ "$(date +%s)" -lt "$end" ]; do
  line=$("$bin/bench/strata-stream-probe" --server "$servers" --dataset soak --world "$world" \
           --batch-size "$batch" --epoch "$epoch" --stall-ms 5000 --step-ms "$step_ms" \
           --slow-every "$slow_every" --slow-ms "$slow_ms" 2>>"$dir/probe.err" || true)
  get() { echo "$line" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
  if [ -z "$(get delivered)" ]; then
    echo "epoch $epoch: the probe printed nothing (see $dir/probe.err)"; aborts=$((aborts + world))
  else
    echo "epoch $epoch: delivered $(get delivered) lost $(get lost) duplicated $(get duplicated)" \
         "failovers $(get failovers) stalls $(get stalls) readmissions $(get readmissions) aborts $(get aborts)"
    delivered=$((delivered + $(get delivered))); lost=$((lost + $(get lost)))
    duplicated=$((duplicated + $(get duplicated))); failovers=$((failovers + $(get failovers)))
    stalls=$((stalls + $(get stalls))); readmissions=$((readmissions + $(get readmissions)))
    aborts=$((aborts + $(get aborts)))
  fi
  epoch=$((epoch + 1))
done
kills=$(grep -c "kill -9" "$dir/nemesis.log" 2>/dev/null || echo 0)
echo "soak total: $epoch epochs, $kills kills: delivered $delivered lost $lost duplicated $duplicated" \
     "failovers $failovers stalls $stalls readmissions $readmissions aborts $aborts"
[ "$lost" -eq 0 ] && [ "$duplicated" -eq 0 ] && [ "$aborts" -eq 0 ]
