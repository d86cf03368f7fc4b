#!/usr/bin/env bash
# Runs a strata cluster on this machine's loopback, for trying things out and
# for tests. Static membership: every node knows the others from the command
# line.
#
#   deploy/local/cluster.sh start --nodes N --base-port P --dir DIR [--metrics-base-port M]
#                                 [--etcd HOST:PORT[,...]] [-- STRATAD_ARGS...]
#   deploy/local/cluster.sh stop --dir DIR
#   deploy/local/cluster.sh restart --node I --dir DIR   (starts node I again, as it was started)
#   deploy/local/cluster.sh status --dir DIR
#
# Node i (1..N) is "node-i": gRPC on 127.0.0.1:P+i-1, metrics on
# 127.0.0.1:M+i-1 (M defaults to P+100), data in DIR/node-i, log in
# DIR/node-i.log, pid in DIR/node-i.pid. With --etcd the nodes find each other
# through etcd instead of the static list. STRATAD (default: build/server/stratad
# next to this script's repository) picks the binary.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
stratad="${STRATAD:-$root/build/server/stratad}"

# True if process $1 runs (a zombie left unreaped by PID 1 does not count).
alive() {
  kill -0 "$1" 2>/dev/null || return 1
  [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != "Z" ]
}

usage() { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
[ $# -ge 1 ] || usage
cmd="$1"; shift
nodes=3; base=7400; mbase=""; dir=""; etcd=""; extra=(); node=""
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) nodes="$2"; shift 2 ;;
    --base-port) base="$2"; shift 2 ;;
    --metrics-base-port) mbase="$2"; shift 2 ;;
    --dir) dir="$2"; shift 2 ;;
    --etcd) etcd="$2"; shift 2 ;;
    --node) node="$2"; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) usage ;;
    *) echo "cluster.sh: unknown option $1" >&2; usage ;;
  esac
done
[ -n "$dir" ] || { echo "cluster.sh: --dir is required" >&2; exit 2; }
mbase="${mbase:-$((base + 100))}"

start() {
  [[ "$nodes" =~ ^[0-9]+$ ]] && [ "$nodes" -ge 1 ] || { echo "cluster.sh: --nodes must be a positive number" >&2; exit 2; }
  [ -x "$stratad" ] || { echo "cluster.sh: no stratad at $stratad (build first: deploy/local/build.sh)" >&2; exit 1; }
  mkdir -p "$dir"
  local peers="" i
  for i in $(seq 1 "$nodes"); do
    peers+="${peers:+,}node-$i=127.0.0.1:$((base + i - 1))"
  done
  for i in $(seq 1 "$nodes"); do
    if [ -f "$dir/node-$i.pid" ] && alive "$(cat "$dir/node-$i.pid")"; then
      echo "cluster.sh: node-$i is already running (pid $(cat "$dir/node-$i.pid"))" >&2; exit 1
    fi
    local membership=(--peers "$peers")
    [ -n "$etcd" ] && membership=(--etcd "$etcd")
    local cmd=("$stratad" --node-id "node-$i" --listen "127.0.0.1:$((base + i - 1))"
      --metrics-listen "127.0.0.1:$((mbase + i - 1))" --data-dir "$dir/node-$i"
      "${membership[@]}" ${extra[@]+"${extra[@]}"})
    printf '%q ' "${cmd[@]}" >"$dir/node-$i.cmd"
    "${cmd[@]}" >"$dir/node-$i.log" 2>&1 &
    echo $! >"$dir/node-$i.pid"
  done
  wait_ready $(seq 1 "$nodes")
}

wait_ready() {
  local i
  for i in "$@"; do
    local ok=""
    for _ in $(seq 200); do
      if grep -q "ready:" "$dir/node-$i.log" 2>/dev/null; then ok=1; break; fi
      alive "$(cat "$dir/node-$i.pid")" || break
      sleep 0.05
    done
    if [ -z "$ok" ]; then
      echo "cluster.sh: node-$i did not start; its log:" >&2
      cat "$dir/node-$i.log" >&2
      exit 1
    fi
    echo "node-$i  $(grep -o 'ready: .*' "$dir/node-$i.log" | tail -1)  pid $(cat "$dir/node-$i.pid")"
  done
}

restart() {
  [ -n "$node" ] && [ -f "$dir/node-$node.cmd" ] || { echo "cluster.sh: restart needs --node I of a started node" >&2; exit 2; }
  if [ -f "$dir/node-$node.pid" ] && alive "$(cat "$dir/node-$node.pid")"; then
    echo "cluster.sh: node-$node is running" >&2; exit 1
  fi
  : >"$dir/node-$node.log.new"
  cat "$dir/node-$node.log" >>"$dir/node-$node.log.old" 2>/dev/null || true
  eval "$(cat "$dir/node-$node.cmd")" '>"$dir/node-$node.log" 2>&1 &'
  echo $! >"$dir/node-$node.pid"
  rm -f "$dir/node-$node.log.new"
  wait_ready "$node"
}

stop() {
  local f pid stopped=0
  for f in "$dir"/node-*.pid; do
    [ -e "$f" ] || continue
    pid="$(cat "$f")"
    if alive "$pid"; then
      kill -TERM "$pid"
      for _ in $(seq 200); do alive "$pid" || break; sleep 0.05; done
      alive "$pid" && kill -KILL "$pid" 2>/dev/null || true
      stopped=$((stopped + 1))
    fi
    rm -f "$f"
  done
  echo "stopped $stopped node(s)"
}

status() {
  local f pid
  for f in "$dir"/node-*.pid; do
    [ -e "$f" ] || { echo "no nodes in $dir"; return; }
    pid="$(cat "$f")"
    if alive "$pid"; then echo "$(basename "$f" .pid) running (pid $pid)"; else echo "$(basename "$f" .pid) not running"; fi
  done
}

case "$cmd" in
  start) start ;;
  stop) stop ;;
  restart) restart ;;
  status) status ;;
  *) usage ;;
esac
