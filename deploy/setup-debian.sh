#!/usr/bin/env bash
# Installs every Debian package strata needs to build, test, run and benchmark.
# Idempotent: packages already present are skipped, so a second run is quick.
# Usage: deploy/setup-debian.sh            (as root, or with sudo available)
set -euo pipefail
case "${1:-}" in -h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;; esac

PACKAGES=(
  # toolchain
  build-essential cmake ninja-build pkg-config git ccache
  # the linker for programs (cmake/StrataBuildSpeed.cmake)
  lld
  # the second compiler: thread-safety analysis and sanitizers (.ci/sanitize.sh), formatting and lint
  clang-14 clang-format-14 clang-tidy-14
  # libFuzzer and the sanitizers' runtimes for clang 14 (fuzz/, bench/fuzz.sh)
  libclang-rt-14-dev
  # wire contract and RPC
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  # certificate checks before a SIGHUP rotation
  libssl-dev
  # storage, logging, metrics, config, CLI, checksums, archives, JSON
  librocksdb-dev libspdlog-dev libfmt-dev prometheus-cpp-dev libcivetweb-dev libyaml-cpp-dev libsystemd-dev
  libcli11-dev libxxhash-dev libzstd-dev libisal-dev libarchive-dev libcsv-dev nlohmann-json3-dev libboost1.74-dev
  # tests and micro-benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev
  # membership coordinator (issue: real cluster)
  etcd-server etcd-client
  # operations: sd_notify (stratad.service is Type=notify), Prometheus and promtool for
  # the alert-rule and live-scrape tests, systemd-analyze for the unit's test, and node
  # for the Kubernetes manifest validator (tests/deploy/k8s_validate)
  systemd prometheus nodejs
  # Python client and its tests
  pybind11-dev python3-dev python3-numpy python3-pytest python3-torch python3-matplotlib
  # the image example (client/examples/imagenet_style.py, bench/image_pipeline.sh)
  python3-torchvision python3-pil
  # benchmark peers and tools
  nginx-light iperf3 wrk curl procps psmisc
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages present"
else
  echo "setup: installing ${#missing[@]} packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
  # Debian starts services on install; strata's tests and benches start their own.
  for svc in etcd nginx prometheus; do
    if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet "$svc" 2>/dev/null; then
      $SUDO systemctl stop "$svc" || true
    fi
  done
fi

# The Kubernetes manifest validator's npm packages (versions pinned by its
# package-lock.json), installed once so that its test runs offline.
validator="$(cd "$(dirname "$0")/.." && pwd)/tests/deploy/k8s_validate"
if ! command -v npm >/dev/null 2>&1; then  # Debian's nodejs leaves npm to its own package
  $SUDO apt-get install -y -q --no-install-recommends npm
fi
if ! cmp -s "$validator/package-lock.json" "$validator/node_modules/.strata-installed-lock" 2>/dev/null; then
  echo "setup: npm ci in tests/deploy/k8s_validate"
  (cd "$validator" && npm ci --no-audit --no-fund --loglevel=error &&
    cp package-lock.json node_modules/.strata-installed-lock)
fi
echo "setup: done"
