#!/usr/bin/env bash
# Soak: epochs streamed in a loop for N minutes from a local cluster while a
# nemesis stops a random node and starts it again (never more than one down
# at a time): kill -9 mostly, SIGTERM (a drain) --term-percent of the time,
# SIGSTOP --freeze-percent of the time (a node that stops answering but keeps
# its connections open, as a host cut off without a reset; SIGCONT after
# --freeze-s, longer than the 3 s failure timeout).
# The consumer spends a long pause on some steps. Every sample's bytes are
# checked against the digests of the first, undisturbed epoch.
#
# With --churn, a second loop meanwhile writes new versions of a small
# dataset "churn" (--keep-versions 2, so each seal deletes the version two
# back on every node), in turn replicated, erasure coded (ec:2+1, on 3 nodes
# or more) and zstd-compressed, re-running an ingest that a stop interrupts;
# each sealed version is then streamed once, stratified, and checked like
# the main dataset.
#
# Prints, per epoch and in total: samples delivered, lost, duplicated,
# corrupt, failovers, stalls, readmissions and stream aborts; with --churn,
# versions sealed, ingests re-run and the churn streams' figures. At the
# end, with every node running again, it waits for every dataset's replica
# health to be whole (repair catching up with the stops) and counts nodes
# that exited without the nemesis stopping them. Target: 0 lost, duplicated,
# corrupt, aborts and unexpected exits, and replica health whole.
#
#   bench/soak.sh [--minutes N] [--nodes 5] [--replication 3] [--world 4]
#                 [--samples 20000] [--sample-size 4KiB] [--batch-size 16]
#                 [--step-ms 20] [--slow-every 50] [--slow-ms 8000]
#                 [--down-s 2] [--up-s 6] [--term-percent 30]
#                 [--freeze-percent 20] [--freeze-s 6] [--churn]
#                 [--base-port 7600] [--dir DIR]
#
# Builds nothing: expects build/ (deploy/local/build.sh). Exit status 1 if the
# target is missed.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="$root/build"
minutes=5; nodes=5; replication=3; world=4; samples=20000; size=4KiB; batch=16
step_ms=20; slow_every=50; slow_ms=8000; down_s=2; up_s=6; base=7600; dir=""; term_percent=30; freeze_percent=20; freeze_s=6; churn=0
usage() { sed -n '2,34p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-2}"; }
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
    --term-percent) term_percent="$2"; shift 2 ;;
    --freeze-percent) freeze_percent="$2"; shift 2 ;;
    --freeze-s) freeze_s="$2"; shift 2 ;;
    --churn) churn=1; shift ;;
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
mkdir -p "$dir" && dir="$(cd "$dir" && pwd)"
# A node that crashes leaves a core file in $dir (with the kernel's default
# core_pattern), for gdb.
cd "$dir"
ulimit -c unlimited 2>/dev/null || true
# The binaries, copied: a rebuild during a long soak must not swap them
# under the nodes the nemesis restarts.
mkdir -p "$dir/bin"
cp "$bin/server/stratad" "$bin/client/strata" "$bin/bench/strata-stream-probe" "$bin/bench/strata-make-dataset" \
  "$dir/bin/"
export STRATAD="$dir/bin/stratad"
cluster="$root/deploy/local/cluster.sh"
servers=""
for i in $(seq 1 "$nodes"); do servers+="${servers:+,}127.0.0.1:$((base + i - 1))"; done

nemesis_pid=""; churn_pid=""
cleanup() {
  [ -n "$nemesis_pid" ] && kill "$nemesis_pid" 2>/dev/null && wait "$nemesis_pid" 2>/dev/null || true
  [ -n "$churn_pid" ] && kill "$churn_pid" 2>/dev/null && wait "$churn_pid" 2>/dev/null || true
  for f in "$dir"/cluster/node-*.pid; do kill -CONT "$(cat "$f")" 2>/dev/null || true; done
  "$cluster" stop --dir "$dir/cluster" >/dev/null 2>&1 || true
}
trap cleanup EXIT

echo "soak: $nodes nodes, R=$replication, $world ranks, $samples samples of $size, ${minutes} min, in $dir"
"$cluster" start --nodes "$nodes" --base-port "$base" --metrics-base-port $((base + 100)) --dir "$dir/cluster" \
  >/dev/null
"$dir/bin/strata-make-dataset" --out "$dir/data" --format tar --samples "$samples" --size "$size" >/dev/null
# The ingest needs R nodes up in the home's map: retry while the nodes find each other.
for attempt in $(seq 1 30); do
  if "$dir/bin/strata" ingest -q --server "$servers" --dataset soak --replication "$replication" \
       "$dir/data"/*.tar >/dev/null 2>"$dir/ingest.err"; then
    break
  fi
  [ "$attempt" -lt 30 ] || { echo "soak.sh: the ingest failed: $(cat "$dir/ingest.err")" >&2; exit 1; }
  sleep 1
done

touch "$dir/nemesis.log" "$dir/churn.log"
# The first epoch, with no node stopped, records every sample's digest.
line=$("$dir/bin/strata-stream-probe" --server "$servers" --dataset soak --world "$world" \
         --batch-size "$batch" --digests "$dir/soak.digests" 2>>"$dir/probe.err" || true)
[ -s "$dir/soak.digests" ] || { echo "soak.sh: the undisturbed epoch failed: $line" >&2; exit 1; }

alive() { [ -n "$1" ] && kill -0 "$1" 2>/dev/null; }
pid_of() { cat "$dir/cluster/node-$1.pid" 2>/dev/null || true; }
# Starts every node that is not running; a node the nemesis did not stop
# counts as an unexpected exit.
start_stopped() {
  local i
  for i in $(seq 1 "$nodes"); do
    if ! alive "$(pid_of "$i")"; then
      echo "$(date +%T) node-$i exited unexpectedly ($(cat "$dir/cluster/node-$i.exit" 2>/dev/null ||
        echo "no exit status recorded")); its log ended:" >>"$dir/nemesis.log"
      tail -n 5 "$dir/cluster/node-$i.log" >>"$dir/nemesis.log" 2>/dev/null || true
      "$cluster" restart --node "$i" --dir "$dir/cluster" >>"$dir/nemesis.log" 2>&1 || true
    fi
  done
}

# The nemesis: a random node stopped (kill -9, or SIGTERM --term-percent of
# the time, waiting for its drain) and started down_s later, or frozen
# (SIGSTOP --freeze-percent of the time) and let go (SIGCONT) freeze_s later;
# then up_s of quiet.
(
  while true; do
    sleep "$up_s"
    start_stopped
    i=$((RANDOM % nodes + 1))
    pid=$(pid_of "$i")
    roll=$((RANDOM % 100))
    if [ "$roll" -lt "$freeze_percent" ]; then
      kill -STOP "$pid" 2>/dev/null || true
      echo "$(date +%T) nemesis: SIGSTOP node-$i" >>"$dir/nemesis.log"
      sleep "$freeze_s"
      kill -CONT "$pid" 2>/dev/null || true
      continue
    elif [ "$roll" -lt $((freeze_percent + term_percent)) ]; then
      kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 600); do alive "$pid" || break; sleep 0.05; done
      echo "$(date +%T) nemesis: SIGTERM node-$i" >>"$dir/nemesis.log"
    else
      kill -9 "$pid" 2>/dev/null || true
      for _ in $(seq 100); do alive "$pid" || break; sleep 0.05; done
      echo "$(date +%T) nemesis: kill -9 node-$i" >>"$dir/nemesis.log"
    fi
    sleep "$down_s"
    "$cluster" restart --node "$i" --dir "$dir/cluster" >>"$dir/nemesis.log" 2>&1 || true
  done
) &
nemesis_pid=$!

# The churn: versions of a small dataset written, sealed, streamed and
# retired while the nemesis works. Each line of churn.log is one version's
# outcome.
if [ "$churn" = 1 ]; then
  "$dir/bin/strata-make-dataset" --out "$dir/churn-data" --format tar --samples 3000 --size 2KiB \
    --samples-per-tar 500 >/dev/null
  (
    v=0
    while true; do
      v=$((v + 1))
      case $((v % 3)) in
        0) how=(--replication "$replication") ;;
        1) if [ "$nodes" -ge 3 ]; then how=(--redundancy ec:2+1); else how=(--replication "$replication"); fi ;;
        2) how=(--replication "$replication" --compression zstd) ;;
      esac
      reruns=0
      until out=$("$dir/bin/strata" ingest -q --server "$servers" --dataset churn --keep-versions 2 "${how[@]}" \
                    "$dir/churn-data"/*.tar 2>>"$dir/churn.err"); do
        reruns=$((reruns + 1))
        [ "$reruns" -lt 20 ] || { echo "version $v: ${how[*]}: no ingest in 20 tries" >>"$dir/churn.log"; exit 0; }
        sleep 1
      done
      # The version the ingest sealed, by number: a node that was just
      # restarted may not know it yet, and would resolve "churn" to an
      # older one (README, "Versions").
      name=$(echo "$out" | sed -n 's/^ingested \(churn@[0-9]*\):.*/\1/p')
      line=$("$dir/bin/strata-stream-probe" --server "$servers" --dataset "$name" --world 2 --batch-size 64 \
               --sampler stratified --stall-ms 5000 --digests "$dir/churn.digests" 2>>"$dir/churn.err" | tail -1 || true)
      echo "version $v ($name): ${how[*]}: reruns=$reruns $line" >>"$dir/churn.log"
    done
  ) &
  churn_pid=$!
fi

end=$(( $(date +%s) + minutes * 60 ))
epoch=1; delivered=0; lost=0; duplicated=0; corrupt=0; failovers=0; stalls=0; readmissions=0; aborts=0
while [ "$(date +%s)" -lt "$end" ]; do
  line=$("$dir/bin/strata-stream-probe" --server "$servers" --dataset soak --world "$world" \
           --batch-size "$batch" --epoch "$epoch" --stall-ms 5000 --step-ms "$step_ms" \
           --slow-every "$slow_every" --slow-ms "$slow_ms" --digests "$dir/soak.digests" 2>>"$dir/probe.err" || true)
  get() { echo "$line" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
  if [ -z "$(get delivered)" ]; then
    echo "epoch $epoch: the probe printed nothing (see $dir/probe.err)"; aborts=$((aborts + world))
  else
    echo "epoch $epoch: delivered $(get delivered) lost $(get lost) duplicated $(get duplicated)" \
         "corrupt $(get corrupt) failovers $(get failovers) stalls $(get stalls) readmissions $(get readmissions) aborts $(get aborts)"
    delivered=$((delivered + $(get delivered))); lost=$((lost + $(get lost)))
    duplicated=$((duplicated + $(get duplicated))); corrupt=$((corrupt + $(get corrupt))); failovers=$((failovers + $(get failovers)))
    stalls=$((stalls + $(get stalls))); readmissions=$((readmissions + $(get readmissions)))
    aborts=$((aborts + $(get aborts)))
  fi
  epoch=$((epoch + 1))
done
kill "$nemesis_pid" 2>/dev/null; wait "$nemesis_pid" 2>/dev/null || true; nemesis_pid=""
if [ -n "$churn_pid" ]; then
  pkill -P "$churn_pid" 2>/dev/null || true
  kill "$churn_pid" 2>/dev/null; wait "$churn_pid" 2>/dev/null || true; churn_pid=""
fi
# A node the nemesis froze as it was stopped is let go.
for i in $(seq 1 "$nodes"); do kill -CONT "$(pid_of "$i")" 2>/dev/null || true; done
sleep "$down_s"
start_stopped
# Lines of a log that hold a pattern.
count() { grep -c "$1" "$dir/$2" 2>/dev/null || true; }
kills=$(count "nemesis: kill -9" nemesis.log)
terms=$(count "nemesis: SIGTERM" nemesis.log)
freezes=$(count "nemesis: SIGSTOP" nemesis.log)
unexpected=$(count "exited unexpectedly" nemesis.log)
echo "soak total: $((epoch - 1)) epochs, $kills kills, $terms SIGTERMs, $freezes freezes: delivered $delivered lost $lost" \
     "duplicated $duplicated corrupt $corrupt failovers $failovers stalls $stalls readmissions $readmissions" \
     "aborts $aborts"
churn_bad=0
if [ "$churn" = 1 ]; then
  sum() { sed -n "s/.* $1=\([0-9]*\).*/\1/p" "$dir/churn.log" | awk '{ s += $1 } END { print s + 0 }'; }
  versions=$(count "exactly_once=" churn.log)
  not_once=$(count "exactly_once=no" churn.log)
  no_ingest=$(count "no ingest" churn.log)
  echo "churn: $versions versions sealed and streamed, $(sum reruns) ingests re-run, $no_ingest never ingested:" \
       "delivered $(sum delivered) lost $(sum lost) duplicated $(sum duplicated) corrupt $(sum corrupt)" \
       "failovers $(sum failovers) aborts $(sum aborts); $not_once streams not exactly once"
  churn_bad=$(( $(sum lost) + $(sum duplicated) + $(sum corrupt) + $(sum aborts) + not_once + no_ingest ))
fi
# Replica health, once repair has caught up with the stops.
health=""
for _ in $(seq 1 120); do
  health=$("$dir/bin/strata" status --server "$servers" --json 2>/dev/null | /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)
bad = [x["dataset"] for x in d.get("datasets", []) if x.get("healthy", 0) != x.get("shards", 0)]
down = [n["id"] for n in d["map"]["nodes"] if n.get("state") != "NODE_UP"]
print(" ".join(bad + ["down:" + n for n in down]) or "whole")' 2>/dev/null || echo "no answer")
  [ "$health" = whole ] && break
  sleep 1
done
echo "replica health: $health; unexpected exits: $unexpected"
[ "$lost" -eq 0 ] && [ "$duplicated" -eq 0 ] && [ "$corrupt" -eq 0 ] && [ "$aborts" -eq 0 ] && \
  [ "$churn_bad" -eq 0 ] && [ "$unexpected" -eq 0 ] && [ "$health" = whole ]
