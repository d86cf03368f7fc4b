#!/usr/bin/env bash
# Compression on a realistic compressible dataset, against the same data stored uncompressed,
# in one run: stored/logical bytes, ingest MB/s and stream throughput (best and median of
# --repeats runs, interleaved), for --compression none and zstd (level --level).
# The dataset: product reviews as JSON lines (WebDataset tars, one `json` member per sample,
# labels = star ratings), words drawn from a Zipf vocabulary, made by this script.
# Usage: bench/compression.sh [--samples N] [--level L] [--block SIZE] [--repeats K] [--batch B]
#                             [--decompressed-cache SIZE]   (stratad's decompressed_cache_bytes; 0: every read
#                                                            decompresses its block, as a dataset far larger would)
# Needs a build in ./build. Writes bench/results/compression.csv.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="$root/build"
samples=200000
level=3
block=64KiB
dcache=256MiB
repeats=3
batch=256
while [ $# -gt 0 ]; do
  case "$1" in
    --samples) samples="$2"; shift 2 ;;
    --level) level="$2"; shift 2 ;;
    --block) block="$2"; shift 2 ;;
    --decompressed-cache) dcache="$2"; shift 2 ;;
    --repeats) repeats="$2"; shift 2 ;;
    --batch) batch="$2"; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
work="$(mktemp -d /tmp/strata-bench-XXXXXX)"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
mkdir -p "$root/bench/results"
port=$((20000 + RANDOM % 20000))

echo "== making $samples review records (zstd level $level, blocks of $block, decompressed cache $dcache)"
/usr/bin/python3 - "$work/data" "$samples" <<'EOF'
import io, json, os, random, sys, tarfile
out, n = sys.argv[1], int(sys.argv[2])
os.makedirs(out)
rng = random.Random(23)
syll = ["ka", "lo", "mi", "ne", "ra", "to", "su", "vi", "de", "po", "an", "el", "or", "us", "ti", "ba"]
vocab = ["".join(rng.choice(syll) for _ in range(rng.randint(1, 4))) for _ in range(4000)]
weights = [1 / (r + 1) for r in range(len(vocab))]  # Zipf
products = ["B%08d" % rng.randrange(10**8) for _ in range(5000)]
per_tar = 10000
for t in range(0, n, per_tar):
    with tarfile.open(os.path.join(out, "reviews-%05d.tar" % (t // per_tar)), "w") as tar:
        for i in range(t, min(n, t + per_tar)):
            stars = rng.choices([1, 2, 3, 4, 5], [8, 5, 10, 25, 52])[0]
            words = rng.choices(vocab, weights, k=rng.randint(20, 220))
            # Nested: a tar's json member gives its top-level scalars as
            # attributes, and the text would be stored twice.
            rec = {"review_id": "R%010d" % i, "product": rng.choice(products), "stars": stars,
                   "helpful": rng.randint(0, 40), "verified": rng.random() < 0.8,
                   "date": "20%02d-%02d-%02d" % (rng.randint(15, 24), rng.randint(1, 12), rng.randint(1, 28)),
                   "title": " ".join(words[:6]), "text": " ".join(words)}
            for name, data in (("json", json.dumps({"review": rec}).encode()), ("cls", str(stars).encode())):
                info = tarfile.TarInfo("%010d.%s" % (i, name))
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
EOF
du -sh "$work/data" | cut -f1 | sed 's/^/tars: /'

"$bin/server/stratad" --listen 127.0.0.1:$port --metrics-listen "" --data-dir "$work/node" \
  --decompressed-cache-bytes "$dcache" >"$work/stratad.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -q "ready:" "$work/stratad.log" && break; sleep 0.1; done

rate() {  # "elapsed 1.2s: 12,345 samples/s, 12.3 MB/s" -> "12345 12.3"
  grep -oE '[0-9,.]+ samples/s, [0-9,.]+ MB/s' | head -1 | sed -E 's/,//g; s/ samples\/s//; s/ MB\/s//'
}
declare -A ingest_mbs stored logical
for codec in none "zstd:$level"; do
  name=${codec%%:*}
  out=$("$bin/client/strata" ingest --server 127.0.0.1:$port --dataset "$name" --compression "$codec" --compression-block "$block" \
    "$work/data"/*.tar 2>/dev/null)
  read -r _ mbs <<<"$(echo "$out" | rate)"
  ingest_mbs[$name]=$mbs
  read -r stored[$name] logical[$name] <<<"$("$bin/client/strata" describe --server 127.0.0.1:$port "$name" --json |
    /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin)["dataset"]; print(d["file_bytes"], d["bytes"])')"
  echo "ingest $name: ${ingest_mbs[$name]} MB/s, stored ${stored[$name]} bytes for ${logical[$name]} logical"
done

declare -A runs
for rep in $(seq "$repeats"); do  # interleaved: the machine is shared and noisy
  for name in none zstd; do
    out=$("$bin/client/strata" stream --server 127.0.0.1:$port --dataset "$name" --batch-size "$batch" --quiet)
    read -r sps mbs <<<"$(echo "$out" | rate)"
    runs[$name]="${runs[$name]:-} $mbs"
    echo "stream $name run $rep: $sps samples/s, $mbs MB/s"
  done
done

csv="$root/bench/results/compression.csv"
/usr/bin/python3 - "$csv" "$samples" "$level/$block/cache=$dcache" \
  "${stored[none]}" "${logical[none]}" "${ingest_mbs[none]}" "${runs[none]}" \
  "${stored[zstd]}" "${logical[zstd]}" "${ingest_mbs[zstd]}" "${runs[zstd]}" <<'EOF'
import statistics, sys
csv, n, level = sys.argv[1], sys.argv[2], sys.argv[3]
rows = {}
for name, args in (("none", sys.argv[4:8]), ("zstd", sys.argv[8:12])):
    stored, logical, ingest, runs = int(args[0]), int(args[1]), float(args[2]), [float(x) for x in args[3].split()]
    rows[name] = dict(stored=stored, logical=logical, ratio=stored / logical, ingest=ingest,
                      best=max(runs), median=statistics.median(runs))
with open(csv, "w") as f:
    f.write("codec,samples,logical_bytes,stored_bytes,stored_over_logical,ingest_mb_per_s,stream_best_mb_per_s,stream_median_mb_per_s\n")
    for name, r in rows.items():
        codec = name if name == "none" else "zstd:" + level
        f.write(f"{codec},{n},{r['logical']},{r['stored']},{r['ratio']:.3f},{r['ingest']},{r['best']},{r['median']:.1f}\n")
z, p = rows["zstd"], rows["none"]
print()
print(open(csv).read().replace(",", "\t"), end="")
print(f"\nzstd/none: disk {z['stored'] / p['stored']:.3f}x, ingest MB/s {z['ingest'] / p['ingest']:.2f}x, "
      f"stream MB/s best {z['best'] / p['best']:.2f}x, median {z['median'] / p['median']:.2f}x")
EOF
