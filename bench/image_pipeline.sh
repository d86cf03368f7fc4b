#!/usr/bin/env bash
# An image training input pipeline, strata against torchvision's ImageFolder,
# in one run: one local stratad, a generated tree of JPEG files (made once,
# kept in the work folder), and client/examples/imagenet_style.py training the
# same tiny CNN with the same transforms (decode, RandomResizedCrop, flip,
# normalise) through StrataDataset (per_sample, stratified) and through
# ImageFolder + DataLoader + DistributedSampler, at 0, 1 and 2 DataLoader
# workers, interleaved, --repeats times (default 3). Prints images/s (best and
# median of the runs) and the ratios.
# Usage: bench/image_pipeline.sh [--build DIR] [--images N] [--repeats R] [--epochs E] [--workers LIST]
# Needs a build (default ./build) and python3-torchvision. Writes bench/results/image_pipeline.csv.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="$root/build"
images=3000
repeats=3
epochs=1
workers="0,1,2"
while [ $# -gt 0 ]; do
  case "$1" in
    --build) bin="$(cd "$2" && pwd)"; shift 2 ;;
    --images) images="$2"; shift 2 ;;
    --repeats) repeats="$2"; shift 2 ;;
    --epochs) epochs="$2"; shift 2 ;;
    --workers) workers="$2"; shift 2 ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
export PYTHONPATH="$bin/client/python"
# shellcheck source=bench/lib/cluster.sh
source "$root/bench/lib/cluster.sh"
bench_work strata-bench-img
mkdir -p "$root/bench/results"
bench_stratad node

echo "== $images JPEG files, stratad on $server; load: $(uptime | sed 's/.*load average/load average/')"
example="$root/client/examples/imagenet_style.py"
/usr/bin/python3 "$example" --dir "$work/images" --images "$images" --generate-only
/usr/bin/python3 "$example" --server "$server" --dir "$work/images" --images "$images" --workers "$workers" \
  --repeats "$repeats" --epochs "$epochs" --json "$work/results.json"

csv="$root/bench/results/image_pipeline.csv"
/usr/bin/python3 - "$work/results.json" >"$csv" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))
print("workers,strata_best,imagefolder_best,best_ratio,strata_median,imagefolder_median,median_ratio,"
      "strata_max_deviation,imagefolder_max_deviation")
for w in sorted({r["workers"] for r in rows}):
    s, f = ({r["pipeline"]: r for r in rows if r["workers"] == w}[p] for p in ("strata", "imagefolder"))
    print(f"{w},{s['images_per_s']:.0f},{f['images_per_s']:.0f},{s['images_per_s'] / f['images_per_s']:.2f},"
          f"{s['median_images_per_s']:.0f},{f['median_images_per_s']:.0f},"
          f"{s['median_images_per_s'] / f['median_images_per_s']:.2f},{s['max_deviation']:.2f},{f['max_deviation']:.2f}")
PY
echo "== load after: $(uptime | sed 's/.*load average/load average/')"
echo
column -s, -t "$csv"
