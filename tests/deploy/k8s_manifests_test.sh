#!/usr/bin/env bash
# Every manifest under deploy/k8s against the Kubernetes API schema, with
# tests/deploy/k8s_validate/validate.mjs (kubernetes-models' schemas and
# typed interfaces, installed by deploy/setup-debian.sh: nothing is fetched
# here). Seeded mistakes (an unknown field, a wrong type, a missing required
# field) must fail the same validator, so the check can fail.
# Usage: k8s_manifests_test.sh SOURCE_DIR
set -euo pipefail
src="$1"
validator="$src/tests/deploy/k8s_validate"
command -v node >/dev/null || { echo "FAIL: node is not installed (deploy/setup-debian.sh installs it)"; exit 1; }
[ -d "$validator/node_modules/kubernetes-models" ] && [ -d "$validator/node_modules/typescript" ] ||
  { echo "FAIL: the validator's packages are not installed: run deploy/setup-debian.sh"; exit 1; }
node "$validator/validate.mjs" "$src"/deploy/k8s/*.yaml

work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
seeded=0
seed() {  # NAME SED-EXPRESSION: the StatefulSet with one mistake must fail
  sed "$2" "$src/deploy/k8s/statefulset.yaml" >"$work/$1.yaml"
  cmp -s "$work/$1.yaml" "$src/deploy/k8s/statefulset.yaml" && { echo "FAIL: seed $1 changed nothing"; exit 1; }
  if node "$validator/validate.mjs" "$work/$1.yaml" >"$work/$1.out"; then
    echo "FAIL: the validator passed a StatefulSet with $1"; exit 1
  fi
  echo "ok   rejected: $1 ($(grep -m1 FAIL "$work/$1.out" | cut -c1-140))"
  seeded=$((seeded + 1))
}
seed "an unknown field" 's/readinessProbe:/readinesProbe:/'
seed "a string for replicas" 's/replicas: 3/replicas: three/'
seed "a container without a name" 's/^        - name: stratad$/        - stdin: false/'
echo "$seeded seeded mistakes rejected"
