#!/usr/bin/env bash
# Quick start, part two: install, build, and run every test (unit tests and
# integration tests that start real stratad processes on loopback).
# Needs no GPU: CUDA tests report themselves as skipped without one.
#
#   ./test.sh                  # everything (about 6 minutes on 2 cores, after the build)
#   ./test.sh -R Failover      # arguments go to ctest: -R REGEX, -L unit|integration, -j N, ...
set -euo pipefail
cd "$(dirname "$0")"
case "${1:-}" in
  -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
esac
bash deploy/local/build.sh
cd build
# Two tests more than there are cores: the integration tests spend much of
# their time waiting on their servers, so with one test a core the two cores
# were 46% busy; four at a time ran the suite in 334 s against 459 s
# (docs/development.md, "Build time"). A later -j N wins.
ctest --output-on-failure --parallel "$(( $(nproc) + 2 ))" --timeout 900 "$@"
