#!/usr/bin/env bash
# Quick start, part one: install, build, and run strata's main job on this
# machine (a local stratad, a generated dataset, an epoch streamed into a
# small training loop, a summary). See README.md.
set -euo pipefail
cd "$(dirname "$0")"
bash deploy/local/build.sh
exec bash deploy/local/demo.sh
