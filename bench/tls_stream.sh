#!/usr/bin/env bash
# Streaming throughput with TLS (mutual TLS and a token) beside plaintext, one
# run each, for 1 KiB and 1 MiB samples: the same dataset on two stratad, one
# plaintext and one with --tls-cert/--tls-key/--tls-client-ca/--auth-tokens.
# Usage: bench/tls_stream.sh [--small N] [--large N]   (needs a build in ./build)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="$root/build"
small=50000   # 1 KiB samples
large=300     # 1 MiB samples
while [ $# -gt 0 ]; do
  case "$1" in
    --small) small="$2"; shift 2 ;;
    --large) large="$2"; shift 2 ;;
    -h|--help) sed -n '2,6p' "$0"; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
work="$(mktemp -d /tmp/strata-tls-bench-XXXXXX)"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

t="$work/tls"; mkdir -p "$t"
ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
openssl req -x509 "${ec[@]}" -keyout "$t/ca.key" -out "$t/ca.pem" -days 2 -subj /CN=bench-ca 2>/dev/null
for n in node-1 client; do
  printf 'subjectAltName=DNS:%s,IP:127.0.0.1\n' $n >"$t/$n.ext"
  openssl req "${ec[@]}" -keyout "$t/$n.key" -out "$t/$n.csr" -subj /CN=$n 2>/dev/null
  openssl x509 -req -in "$t/$n.csr" -CA "$t/ca.pem" -CAkey "$t/ca.key" -CAcreateserial -days 2 \
    -extfile "$t/$n.ext" -out "$t/$n.pem" 2>/dev/null
done
token=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
echo "admin $token" >"$t/tokens"; echo "$token" >"$t/admin.token"

port=$((20000 + RANDOM % 20000))
start() {  # name port extra-args...
  local name=$1 p=$2; shift 2
  "$bin/server/stratad" --listen 127.0.0.1:$p --metrics-listen "" --data-dir "$work/$name" "$@" \
    >"$work/$name.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do grep -q "ready:" "$work/$name.log" && return; sleep 0.1; done
  cat "$work/$name.log"; exit 1
}
start plain $port
start tls $((port + 1)) --tls-cert "$t/node-1.pem" --tls-key "$t/node-1.key" --tls-client-ca "$t/ca.pem" \
  --auth-tokens "$t/tokens"
plain=(--server 127.0.0.1:$port)
tls=(--server 127.0.0.1:$((port + 1)) --tls-ca "$t/ca.pem" --tls-cert "$t/client.pem" --tls-key "$t/client.key"
  --token-file "$t/admin.token")

rate() { grep -oE '[0-9,.]+ samples/s, [0-9,.]+ MB/s' | head -1 | sed -E 's/,//g; s/ samples\/s//; s/ MB\/s//'; }
printf '%-6s %-9s %14s %10s\n' size transport samples/s MB/s
for kind in small large; do
  if [ $kind = small ]; then n=$small; size=1KiB; batch=256; else n=$large; size=1MiB; batch=8; fi
  "$bin/bench/strata-make-dataset" --out "$work/$kind" --format tar --samples "$n" --size $size \
    --samples-per-tar 10000 >/dev/null
  for transport in plain tls; do
    if [ $transport = plain ]; then args=("${plain[@]}"); else args=("${tls[@]}"); fi
    "$bin/client/strata" ingest "${args[@]}" --dataset $kind "$work/$kind"/*.tar >/dev/null 2>&1
    read -r sps mbs <<<"$("$bin/client/strata" stream "${args[@]}" --dataset $kind --batch-size $batch --quiet | rate)"
    printf '%-6s %-9s %14s %10s\n' $size $transport "$sps" "$mbs"
  done
done
