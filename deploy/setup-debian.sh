#!/usr/bin/env bash
# Installs every Debian package strata needs to build, test, run and benchmark.
# Idempotent: packages already present are skipped, so a second run is quick.
# Usage: deploy/setup-debian.sh            (as root, or with sudo available)
set -euo pipefail

PACKAGES=(
  # toolchain
  build-essential cmake ninja-build pkg-config git ccache
  # the second compiler: thread-safety analysis, formatting and lint (.ci/clang-check.sh)
  clang-14 clang-format-14 clang-tidy-14
  # wire contract and RPC
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  # storage, logging, metrics, config, CLI, checksums, archives, JSON
  librocksdb-dev libspdlog-dev libfmt-dev prometheus-cpp-dev libyaml-cpp-dev
  libcli11-dev libxxhash-dev libarchive-dev libcsv-dev nlohmann-json3-dev libboost1.74-dev
  # tests and micro-benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev
  # membership coordinator (issue: real cluster)
  etcd-server etcd-client
  # Python client and its tests
  pybind11-dev python3-dev python3-numpy python3-pytest python3-torch python3-matplotlib
  # benchmark peers and tools
  nginx-light iperf3 wrk curl procps psmisc
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "setup: installing ${#missing[@]} packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
# Debian starts services on install; strata's tests and benches start their own.
for svc in etcd nginx; do
  if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet "$svc" 2>/dev/null; then
    $SUDO systemctl stop "$svc" || true
  fi
done
echo "setup: done"
