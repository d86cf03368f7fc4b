#!/usr/bin/env bash
# Builds stratad's image from deploy/container/Containerfile with podman (or
# docker when podman is missing), tags it localhost/strata/stratad:VERSION and
# prints its size. Then, with --test, starts it and checks /healthz and /readyz.
#   deploy/container/build.sh [--test]
# Needs a container engine that can pull debian:bookworm(-slim); on a machine
# without registry access, import a Debian root file system made with
# mmdebstrap as those two names first (see README "In a container").
# ENGINE_FLAGS go before the subcommand (e.g. "--runtime runc"), BUILD_FLAGS and
# RUN_FLAGS after it (e.g. "--network host --ulimit nofile=20000:20000").
set -euo pipefail
case "${1:-}" in -h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;; esac
root="$(cd "$(dirname "$0")/../.." && pwd)"
engine="${ENGINE:-$(command -v podman || command -v docker || true)}"
[ -n "$engine" ] || { echo "build.sh: neither podman nor docker is installed" >&2; exit 1; }
version="$(sed -n 's/^project(strata VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt")"
image="localhost/strata/stratad:$version"
# shellcheck disable=SC2086  # the flag variables are word lists
"$engine" ${ENGINE_FLAGS:-} build ${BUILD_FLAGS:-} -f "$root/deploy/container/Containerfile" -t "$image" "$root"
echo "image $image: $("$engine" ${ENGINE_FLAGS:-} image inspect --format '{{.Size}}' "$image") bytes"

if [ "${1:-}" = "--test" ]; then
  name="strata-image-test-$$"
  port="${TEST_PORT:-19400}"
  "$engine" ${ENGINE_FLAGS:-} run -d --rm --name "$name" ${RUN_FLAGS:-} "$image" \
    --listen=127.0.0.1:0 --metrics-listen="127.0.0.1:$port" --data-dir=/var/lib/strata >/dev/null
  trap '"$engine" ${ENGINE_FLAGS:-} stop -t 10 "$name" >/dev/null 2>&1 || true' EXIT
  for _ in $(seq 100); do
    curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break
    sleep 0.2
  done
  curl -fsS "http://127.0.0.1:$port/healthz" && curl -fsS "http://127.0.0.1:$port/readyz"
  "$engine" ${ENGINE_FLAGS:-} stop -t 10 "$name" >/dev/null
  trap - EXIT
  echo "image test: passed (stratad answered /healthz and /readyz in the container, then stopped on SIGTERM)"
fi
