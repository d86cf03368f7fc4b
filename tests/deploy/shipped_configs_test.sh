#!/usr/bin/env bash
# Starts stratad exactly as the shipped setups do, only paths and ports
# changed: the systemd unit's ExecStart with config/cluster-node.yaml, the
# Kubernetes ConfigMap with the StatefulSet's args (and a local etcd), and the
# container's CMD. Each listens on 0.0.0.0, where stratad refuses to start
# without TLS and tokens: with openssl-made certificates and a token file
# where the setups name them, each must come up, and answer `strata status`
# over mutual TLS with a reader token (and refuse it without one). Without the
# certificates, each must refuse to start, naming the missing file.
# Usage: shipped_configs_test.sh SOURCE_DIR STRATAD_BINARY STRATA_BINARY
set -euo pipefail
if [ "${1:-}" = "--help" ] || [ "$#" -ne 3 ]; then
  sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'
  [ "${1:-}" = "--help" ] && exit 0 || exit 2
fi
src="$1"; stratad="$2"; strata="$3"
work="$(mktemp -d)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
passed=0

# --- certificates and tokens, where every setup names them (/etc/strata/tls) ---
tls="$work/etc/tls"
mkdir -p "$tls"
(
  cd "$tls"
  ec="-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
  openssl req -x509 $ec -keyout ca.key -out ca.pem -days 2 -subj /CN=test-ca 2>/dev/null
  # One certificate for every node id the setups give: node-1 (the file),
  # stratad-0 (the StatefulSet's pod name), and the address the test dials.
  openssl req $ec -keyout node.key -out node.csr -subj /CN=node-1 2>/dev/null
  echo 'subjectAltName=DNS:node-1,DNS:stratad-0,DNS:localhost,IP:127.0.0.1' >node.ext
  openssl x509 -req -in node.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile node.ext \
    -out node.pem 2>/dev/null
  openssl req $ec -keyout client.key -out client.csr -subj /CN=trainer 2>/dev/null
  openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -out client.pem 2>/dev/null
  echo "reader-token-for-the-shipped-configs" >reader.token
  printf 'reader %s\nadmin admin-token-for-the-shipped-configs\n' "$(cat reader.token)" >tokens
)

ports() {  # a base port P with P..P+$1-1 free on 127.0.0.1
  python3 -c "import sys; sys.path.insert(0, sys.argv[1]); import free_ports; print(free_ports.free_port_run(int(sys.argv[2])))" \
    "$src/tests/deploy" "$1"
}

# Rewrites the shipped paths and ports into the test's.
localise() {  # FILE PORT METRICS_PORT DATA_DIR
  sed -i -e "s|/etc/strata|$work/etc|g" -e "s|/var/lib/strata|$4|g" -e "s|:7400|:$2|g" -e "s|:9400|:$3|g" "$1"
}

# Runs stratad with the given args until it logs "ready:" (or fails the test),
# checks `strata status` over mutual TLS with and without the token, stops it.
serves() {  # NAME PORT ARGS...
  local name="$1" port="$2"; shift 2
  local log="$work/$name.log"
  setsid "$stratad" "$@" >"$log" 2>&1 &
  local pid=$!
  pids+=("$pid")
  for _ in $(seq 1 300); do
    grep -q "ready:" "$log" && break
    kill -0 "$pid" 2>/dev/null || { echo "FAIL: $name: stratad exited"; cat "$log"; exit 1; }
    sleep 0.1
  done
  grep -q "ready:" "$log" || { echo "FAIL: $name: not ready in 30 s"; cat "$log"; exit 1; }
  local client=(--server "127.0.0.1:$port" --tls-ca "$tls/ca.pem" --tls-cert "$tls/client.pem"
                --tls-key "$tls/client.key")
  # The connection options before the subcommand, as README.md and docs/security.md show them.
  "$strata" "${client[@]}" --token-file "$tls/reader.token" status --json >"$work/$name.status" \
    || { echo "FAIL: $name: strata status with a reader token"; cat "$log"; exit 1; }
  grep -q '"nodes"' "$work/$name.status" || { echo "FAIL: $name: no status"; cat "$work/$name.status"; exit 1; }
  if "$strata" status "${client[@]}" >/dev/null 2>"$work/$name.err"; then
    echo "FAIL: $name: served status without a token"; exit 1
  fi
  grep -q "Unauthenticated" "$work/$name.err" || { echo "FAIL: $name: no Unauthenticated"; cat "$work/$name.err"; exit 1; }
  kill -TERM "$pid"
  wait "$pid" || { echo "FAIL: $name: SIGTERM did not end it with 0"; cat "$log"; exit 1; }
  echo "ok   $name: ready on 0.0.0.0:$port, mutual TLS and tokens"
  passed=$((passed + 1))
}

# --- the systemd unit with config/cluster-node.yaml ---
read -r -a unit_args <<<"$(sed -n 's|^ExecStart=/usr/local/bin/stratad ||p' "$src/deploy/systemd/stratad.service")"
[ "${#unit_args[@]}" -gt 0 ] || { echo "FAIL: no ExecStart=/usr/local/bin/stratad in the unit"; exit 1; }
p="$(ports 2)"
cp "$src/config/cluster-node.yaml" "$work/etc/stratad.yaml"
localise "$work/etc/stratad.yaml" "$p" $((p + 1)) "$work/data-systemd"
for i in "${!unit_args[@]}"; do
  unit_args[$i]="$(sed -e "s|/etc/strata|$work/etc|g" -e "s|/var/lib/strata|$work/data-systemd|g" <<<"${unit_args[$i]}")"
done
serves systemd "$p" "${unit_args[@]}"

# Without its certificates the same start is refused, naming the file.
mv "$tls/node.pem" "$tls/node.pem.away"
if "$stratad" "${unit_args[@]}" >"$work/refused.log" 2>&1; then echo "FAIL: started without its certificate"; exit 1; fi
grep -q "tls.cert: $tls/node.pem is not a file" "$work/refused.log" \
  || { echo "FAIL: the refusal does not name tls.cert"; cat "$work/refused.log"; exit 1; }
mv "$tls/node.pem.away" "$tls/node.pem"
echo "ok   systemd: without node.pem it refuses to start, naming tls.cert"
passed=$((passed + 1))

# --- the container's CMD ---
mapfile -t cmd_args < <(sed -n '/^CMD \[/,/\]/p' "$src/deploy/container/Containerfile" | grep -o '"--[^"]*"' | tr -d '"')
[ "${#cmd_args[@]}" -gt 0 ] || { echo "FAIL: no CMD in the Containerfile"; exit 1; }
p="$(ports 2)"
for i in "${!cmd_args[@]}"; do
  cmd_args[$i]="$(sed -e "s|/etc/strata|$work/etc|g" -e "s|/var/lib/strata|$work/data-container|g" \
    -e "s|:7400|:$p|g" -e "s|:9400|:$((p + 1))|g" <<<"${cmd_args[$i]}")"
done
serves container "$p" "${cmd_args[@]}"

# --- the Kubernetes ConfigMap and StatefulSet, with a local etcd ---
if command -v etcd >/dev/null; then
  e="$(ports 2)"
  setsid etcd --name t --data-dir "$work/etcd" --listen-client-urls "http://127.0.0.1:$e" \
    --advertise-client-urls "http://127.0.0.1:$e" --listen-peer-urls "http://127.0.0.1:$((e + 1))" \
    --initial-advertise-peer-urls "http://127.0.0.1:$((e + 1))" --initial-cluster "t=http://127.0.0.1:$((e + 1))" \
    >"$work/etcd.log" 2>&1 &
  pids+=("$!")
  disown "$!"
  for _ in $(seq 1 100); do
    etcdctl --endpoints "127.0.0.1:$e" endpoint health >/dev/null 2>&1 && break
    sleep 0.1
  done
  sed -n '/^  stratad.yaml: |/,$p' "$src/deploy/k8s/configmap.yaml" | tail -n +2 | sed 's/^    //' \
    >"$work/etc/k8s.yaml"
  p="$(ports 2)"
  localise "$work/etc/k8s.yaml" "$p" $((p + 1)) "$work/data-k8s"
  mapfile -t k8s_args < <(sed -n '/^ *args:/,/^ *[a-z]*:$/p' "$src/deploy/k8s/statefulset.yaml" \
    | sed -n 's/^ *- \(--.*\)$/\1/p')
  [ "${#k8s_args[@]}" -gt 0 ] || { echo "FAIL: no args in statefulset.yaml"; exit 1; }
  for i in "${!k8s_args[@]}"; do
    k8s_args[$i]="$(sed -e "s|^--config=.*|--config=$work/etc/k8s.yaml|" -e 's|\$(POD_NAME)|stratad-0|g' \
      -e "s|^--advertise=.*|--advertise=127.0.0.1:$p|" -e "s|^--etcd=.*|--etcd=127.0.0.1:$e|" <<<"${k8s_args[$i]}")"
  done
  serves kubernetes "$p" "${k8s_args[@]}"
else
  echo "skip kubernetes: etcd is not installed"
fi

echo "$passed passed, 0 failed"
