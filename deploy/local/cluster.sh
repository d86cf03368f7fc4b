#!/usr/bin/env bash
# Runs a strata cluster on this machine's loopback, for trying things out and
# for tests. Static membership: every node knows the others from the command
# line.
#
#   deploy/local/cluster.sh start --nodes N --base-port P --dir DIR [--metrics-base-port M]
#                                 [--zones Z1,Z2,...] [--etcd HOST:PORT[,...]] [--tls] [-- STRATAD_ARGS...]
#   deploy/local/cluster.sh stop --dir DIR
#   deploy/local/cluster.sh restart --node I --dir DIR   (starts node I again, as it was started)
#   deploy/local/cluster.sh status --dir DIR
#
# Node i (1..N) is "node-i": gRPC on 127.0.0.1:P+i-1, metrics on
# 127.0.0.1:M+i-1 (M defaults to P+100), data in DIR/node-i, log in
# DIR/node-i.log, pid in DIR/node-i.pid; when it ends, how (its exit status,
# or the signal that killed it) in DIR/node-i.exit, which `status` shows.
# With --zones node i is in zone
# Z((i-1) mod K) of the K zones given (its --zone, and in the static list),
# so a shard's copies go to distinct zones. With --etcd the nodes find each
# other through etcd instead of the static list. With --tls, DIR/tls gets a CA, a
# certificate per node (CN and SAN name the node id; SAN also IP:127.0.0.1),
# a client certificate and a token file (writer.token, reader.token,
# admin.token); the nodes serve mutual TLS and require tokens. STRATAD
# (default: build/server/stratad next to this script's repository) picks the binary.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
stratad="${STRATAD:-$root/build/server/stratad}"

# True if process $1 runs (a zombie left unreaped by PID 1 does not count).
alive() {
  kill -0 "$1" 2>/dev/null || return 1
  [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != "Z" ]
}

# launch I CMD...: starts node I in the background, its pid in DIR/node-I.pid.
# A watcher waits for it and writes how it ended to DIR/node-I.exit (with the
# node orphaned, its exit status would go to PID 1 and be lost: a node that
# dies with no log line, from a signal that leaves no core, would leave no
# trace). The watcher ignores hangups and holds none of the caller's
# descriptors, so that a caller reading this script's output is not kept
# waiting.
launch() {
  local i="$1"; shift
  rm -f "$dir/node-$i.pid" "$dir/node-$i.exit"
  (
    trap '' HUP INT TERM
    "$@" >"$dir/node-$i.log" 2>&1 &
    local child=$! rc how
    echo "$child" >"$dir/node-$i.pid"
    wait "$child" && rc=0 || rc=$?
    if [ "$rc" -gt 128 ]; then how="killed by SIG$(kill -l $((rc - 128)) 2>/dev/null || echo $((rc - 128)))"; else how="exit status $rc"; fi
    echo "$(date +%FT%T) pid $child $how" >"$dir/node-$i.exit"
  ) </dev/null >/dev/null 2>&1 &
  for _ in $(seq 200); do [ -s "$dir/node-$i.pid" ] && return 0; sleep 0.01; done
  echo "cluster.sh: node-$i did not start" >&2
  exit 1
}

usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit "${1:-2}"; }
[ $# -ge 1 ] || usage
cmd="$1"; shift
case "$cmd" in -h|--help|help) usage 0 ;; esac
nodes=3; base=7400; mbase=""; dir=""; etcd=""; extra=(); node=""; tls=""; zones=()
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) nodes="$2"; shift 2 ;;
    --base-port) base="$2"; shift 2 ;;
    --metrics-base-port) mbase="$2"; shift 2 ;;
    --dir) dir="$2"; shift 2 ;;
    --etcd) etcd="$2"; shift 2 ;;
    --node) node="$2"; shift 2 ;;
    --tls) tls=1; shift ;;
    --zones) IFS=, read -r -a zones <<<"$2"; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) usage 0 ;;
    *) echo "cluster.sh: unknown option $1" >&2; usage ;;
  esac
done
[ -n "$dir" ] || { echo "cluster.sh: --dir is required" >&2; exit 2; }
mbase="${mbase:-$((base + 100))}"

# A CA, node-i and client certificates and tokens under DIR/tls (kept if present).
make_tls() {
  local t="$dir/tls" i ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
  mkdir -p "$t"; chmod 700 "$t"
  [ -f "$t/ca.pem" ] || openssl req -x509 "${ec[@]}" -keyout "$t/ca.key" -out "$t/ca.pem" -days 365 \
    -subj "/CN=strata-local-ca" 2>/dev/null
  issue() {  # name cn
    [ -f "$t/$1.pem" ] && return
    printf 'subjectAltName=DNS:%s,IP:127.0.0.1\n' "$2" >"$t/$1.ext"
    openssl req "${ec[@]}" -keyout "$t/$1.key" -out "$t/$1.csr" -subj "/CN=$2" 2>/dev/null
    openssl x509 -req -in "$t/$1.csr" -CA "$t/ca.pem" -CAkey "$t/ca.key" -CAcreateserial -out "$t/$1.pem" \
      -days 365 -extfile "$t/$1.ext" 2>/dev/null
  }
  for i in $(seq 1 "$nodes"); do issue "node-$i" "node-$i"; done
  issue client client
  if [ ! -f "$t/tokens" ]; then
    local role
    for role in reader writer admin; do head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$t/$role.token"; done
    { echo "# role token"; for role in reader writer admin; do echo "$role $(cat "$t/$role.token")"; done; } >"$t/tokens"
    chmod 600 "$t"/*.token "$t/tokens" "$t"/*.key
  fi
}

# zone_of I [PREFIX]: node I's zone (PREFIX before it), or nothing without --zones.
zone_of() {
  [ ${#zones[@]} -gt 0 ] || return 0
  printf '%s%s' "${2:-}" "${zones[$((($1 - 1) % ${#zones[@]}))]}"
}

start() {
  [[ "$nodes" =~ ^[0-9]+$ ]] && [ "$nodes" -ge 1 ] || { echo "cluster.sh: --nodes must be a positive number" >&2; exit 2; }
  local z
  for z in ${zones[@]+"${zones[@]}"}; do
    [[ "$z" =~ ^[A-Za-z0-9._-]+$ ]] || { echo "cluster.sh: --zones takes names of letters, digits, '.', '_' and '-', comma-separated (not '$z')" >&2; exit 2; }
  done
  [ -x "$stratad" ] || { echo "cluster.sh: no stratad at $stratad (build first: deploy/local/build.sh)" >&2; exit 1; }
  mkdir -p "$dir"
  local security=()
  if [ -n "$tls" ]; then
    make_tls
  fi
  local peers="" i
  for i in $(seq 1 "$nodes"); do
    peers+="${peers:+,}node-$i=127.0.0.1:$((base + i - 1))$(zone_of "$i" @)"
  done
  for i in $(seq 1 "$nodes"); do
    if [ -f "$dir/node-$i.pid" ] && alive "$(cat "$dir/node-$i.pid")"; then
      echo "cluster.sh: node-$i is already running (pid $(cat "$dir/node-$i.pid"))" >&2; exit 1
    fi
    local membership=(--peers "$peers")
    [ -n "$tls" ] && security=(--tls-cert "$dir/tls/node-$i.pem" --tls-key "$dir/tls/node-$i.key"
      --tls-client-ca "$dir/tls/ca.pem" --auth-tokens "$dir/tls/tokens")
    [ -n "$etcd" ] && membership=(--etcd "$etcd")
    [ ${#zones[@]} -gt 0 ] && membership+=(--zone "$(zone_of "$i")")
    local cmd=("$stratad" --node-id "node-$i" --listen "127.0.0.1:$((base + i - 1))"
      --metrics-listen "127.0.0.1:$((mbase + i - 1))" --data-dir "$dir/node-$i"
      "${membership[@]}" ${security[@]+"${security[@]}"} ${extra[@]+"${extra[@]}"})
    printf '%q ' "${cmd[@]}" >"$dir/node-$i.cmd"
    launch "$i" "${cmd[@]}"
  done
  wait_ready $(seq 1 "$nodes")
  if [ -n "$tls" ]; then
    echo "clients: strata --tls-ca $dir/tls/ca.pem --tls-cert $dir/tls/client.pem --tls-key $dir/tls/client.key" \
      "--token-file $dir/tls/writer.token (or reader.token, admin.token)"
  fi
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
  local cmd
  eval "cmd=($(cat "$dir/node-$node.cmd"))"
  launch "$node" "${cmd[@]}"
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
  # Every node with a pid file (started) or an exit file (ended; stop removes
  # the pid files but keeps how each node ended).
  local f node pid found=0
  for node in $(for f in "$dir"/node-*.pid "$dir"/node-*.exit; do [ -e "$f" ] && basename "${f%.*}"; done |
                sort -t- -k2n -u); do
    found=1
    pid="$(cat "$dir/$node.pid" 2>/dev/null || true)"
    if [ -n "$pid" ] && alive "$pid"; then
      echo "$node running (pid $pid)"
    else
      echo "$node not running$(sed -n '1s/^\(.*\)$/ (ended \1)/p' "$dir/$node.exit" 2>/dev/null)"
    fi
  done
  [ "$found" = 1 ] || echo "no nodes in $dir"
}

case "$cmd" in
  start) start ;;
  stop) stop ;;
  restart) restart ;;
  status) status ;;
  *) usage ;;
esac
