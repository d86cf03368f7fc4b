#!/usr/bin/env bash
# promtool check config / check rules / test rules on deploy/prometheus/.
# Usage: promtool_test.sh SOURCE_DIR
set -euo pipefail
src="$1"
command -v promtool >/dev/null || { echo "SKIP: promtool is not installed (Debian package prometheus)"; exit 77; }
promtool --version 2>&1 | head -1
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
# As installed: alerts.yml beside the config under the name it refers to.
cp "$src/deploy/prometheus/prometheus.yml" "$work/prometheus.yml"
cp "$src/deploy/prometheus/alerts.yml" "$work/strata-alerts.yml"
promtool check config "$work/prometheus.yml"
promtool check rules "$src/deploy/prometheus/alerts.yml"
cd "$src/deploy/prometheus" && promtool test rules alerts_test.yml
