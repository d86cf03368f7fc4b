# shellcheck shell=bash disable=SC2154  # $bin: set by the sourcing script
# Shared by the bench scripts that run against local stratad processes.
# Source it after the options are read (it uses $bin, the build folder):
#   source "$root/bench/lib/cluster.sh"
#   bench_work strata-bench-py     # $work: a fresh folder, removed on exit
#   bench_stratad node             # $server: a stratad's gRPC address once it is ready
# On exit every stratad started here is stopped (SIGTERM, then waited for) and
# $work removed; the script must set no EXIT trap of its own.

bench_pids=()

bench_cleanup() {
  local p
  for p in "${bench_pids[@]}"; do
    kill "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
  if [ -n "${work:-}" ]; then rm -rf "$work"; fi
}

# bench_work PREFIX: sets $work to a new folder /tmp/PREFIX-XXXXXX and the EXIT trap.
bench_work() {
  work="$(mktemp -d "/tmp/$1-XXXXXX")"
  trap bench_cleanup EXIT
}

# bench_stratad NAME [ARG...]: starts "$bin/server/stratad" on a free loopback
# port with its data in $work/NAME, its log in $work/NAME.log and no metrics
# listener, plus ARGs; sets $server to its gRPC address once it logs "ready:".
# Exits (with the log on stderr) when it is not ready within 20 s.
bench_stratad() {
  local name="$1"
  shift
  local log="$work/$name.log"
  : >"$log"  # exists before the first look at it
  "$bin/server/stratad" --listen 127.0.0.1:0 --metrics-listen "" --data-dir "$work/$name" "$@" >"$log" 2>&1 &
  bench_pids+=($!)
  server=""
  local _
  for _ in $(seq 200); do
    server="$(sed -nE 's/.*ready: grpc=([^ ]+).*/\1/p' "$log" | head -1)"
    [ -n "$server" ] && return 0
    sleep 0.1
  done
  cat "$log" >&2
  exit 1
}
