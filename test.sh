#!/usr/bin/env bash
# Quick start, part two: install, build, and run every test (unit tests and
# integration tests that start real stratad processes on loopback).
# Needs no GPU: CUDA tests report themselves as skipped without one.
set -euo pipefail
cd "$(dirname "$0")"
bash deploy/local/build.sh
cd build
ctest --output-on-failure --parallel "$(nproc)" --timeout 900 "$@"
