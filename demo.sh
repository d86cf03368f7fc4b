#!/usr/bin/env bash
# Quick start, part one: install, build, and run strata's main job on this
# machine (a local 3-node cluster, a generated dataset, batches streamed into
# a small training loop while a node is killed, a summary). See README.md.
#
#   ./demo.sh      # takes no arguments; STRATA_DEMO_DIR, STRATA_DEMO_PORT and
#                  # STRATA_DEMO_SAMPLES change where and how much (deploy/local/demo.sh)
set -euo pipefail
cd "$(dirname "$0")"
case "${1:-}" in
  "") ;;
  -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
  *) echo "demo.sh: takes no arguments (see --help)" >&2; exit 2 ;;
esac
bash deploy/local/build.sh
exec bash deploy/local/demo.sh
