#!/usr/bin/python3
"""imagenet_style.py: an image classifier trained from JPEG files, through strata
and through torchvision's ImageFolder, with the same model and transforms.

1. Generates a folder tree of real JPEG files with PIL (--classes class
   folders of Zipf-distributed sizes, so the last class is rare; 64-128 px
   sides), once: an existing tree made with the same options is reused.
2. Ingests it into strata with the Python client (key = path, label = class
   folder, one field "jpg"), as `strata ingest --dataset NAME DIR/` would.
3. Trains a tiny CNN on the CPU for each worker count in --workers, with
   decode (PIL), RandomResizedCrop, RandomHorizontalFlip, ToTensor and
   Normalize in the DataLoader's workers:
   - strata: StrataDataset(per_sample=True, sampler="stratified", transform=...)
     through ds.loader(num_workers=N);
   - imagefolder: torchvision.datasets.ImageFolder + DataLoader +
     DistributedSampler (world 1, shuffle) over the same files.
4. Prints, per pipeline and worker count, images/s (each epoch timed from
   creating the loader's iterator to its last batch, so worker start-up
   counts; the fork server strata's workers come from starts once per
   process, before, and its time is printed), whether every image arrived exactly once, the first batches'
   class composition and the worst batch's deviation from the class shares,
   then a table of the best and median rate of --repeats runs and the ratios
   strata / ImageFolder.

    PYTHONPATH=build/client/python /usr/bin/python3 client/examples/imagenet_style.py \\
        --server 127.0.0.1:7400 --images 2000 --workers 0,1,2

bench/image_pipeline.sh runs it against a local stratad.
"""

import argparse
import io
import json
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np
import torch
import torch.utils.data
from PIL import Image
from torchvision import datasets, transforms

import strata
import strata.torch
from strata.torch import StrataDataset

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--server", default="127.0.0.1:7400")
    p.add_argument("--dataset", default="images", help="strata dataset name")
    p.add_argument("--dir", default=None, help="where the JPEG tree is (made if missing; default: a temporary one)")
    p.add_argument("--images", type=int, default=400, help="JPEG files to generate")
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--crop", type=int, default=56, help="RandomResizedCrop's output side")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--workers", default="0,1,2", help="DataLoader worker counts to run, comma-separated")
    p.add_argument("--pipelines", default="strata,imagefolder")
    p.add_argument("--epochs", type=int, default=1, help="epochs per run")
    p.add_argument("--repeats", type=int, default=1, help="runs per (pipeline, workers), interleaved")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--generate-only", action="store_true", help="make the JPEG tree and exit")
    p.add_argument("--json", default=None, help="write the results as JSON here")
    return p.parse_args(argv)


# -- the images ----------------------------------------------------------------

def class_sizes(images, classes):
    """Zipf (1/k) class sizes summing to `images`, each at least 1."""
    weights = [1.0 / (k + 1) for k in range(classes)]
    sizes = [max(1, int(images * w / sum(weights))) for w in weights]
    sizes[0] += images - sum(sizes)
    return sizes


def generate(root, images, classes, seed):
    """JPEG files root/classNN/NNNNNN.jpg; a class is a colour with a bright
    square at a class-dependent place, over noise. Reused when root/MANIFEST
    says the same options made it."""
    root = Path(root)
    manifest = json.dumps({"images": images, "classes": classes, "seed": seed})
    if (root / "MANIFEST").exists() and (root / "MANIFEST").read_text() == manifest:
        return
    rng = np.random.default_rng(seed)
    for c, count in enumerate(class_sizes(images, classes)):
        folder = root / f"class{c:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        colour = np.array([(c * 97) % 256, (c * 57 + 80) % 256, (c * 31 + 160) % 256], dtype=np.float32)
        for i in range(count):
            h, w = int(rng.integers(64, 129)), int(rng.integers(64, 129))
            pixels = colour + rng.normal(0, 40, size=(h, w, 3))
            y, x = (c * h) // (classes + 1), (c * w) // (classes + 1)
            pixels[y:y + h // 4, x:x + w // 4] = 255
            Image.fromarray(pixels.clip(0, 255).astype(np.uint8)).save(folder / f"{i:06d}.jpg", quality=90)
    (root / "MANIFEST").write_text(manifest)


def ingest(client, name, root):
    """The tree as a new version of `name` (label = class folder); returns "name@N"."""
    files = sorted(Path(root).glob("class*/*.jpg"))
    summary = client.ingest(name, ({"key": str(f.relative_to(root)), "label": f.parent.name,
                                    "fields": {"jpg": f.read_bytes()}} for f in files))
    return f"{name}@{summary['dataset']['version']}"


# -- the two pipelines -----------------------------------------------------------

def train_transform(crop):
    return transforms.Compose([transforms.RandomResizedCrop(crop), transforms.RandomHorizontalFlip(),
                               transforms.ToTensor(), transforms.Normalize(MEAN, STD)])


class StrataSample:
    """A strata sample -> (image tensor, class index, sample id); runs in the
    workers, so it is a picklable module-level class."""

    def __init__(self, crop, class_to_idx):
        self.transform = train_transform(crop)
        self.class_to_idx = class_to_idx

    def __call__(self, sample):
        image = Image.open(io.BytesIO(sample["fields"]["jpg"])).convert("RGB")
        return self.transform(image), self.class_to_idx[sample["label"]], sample["id"]


class IndexedImageFolder(datasets.ImageFolder):
    """ImageFolder whose items carry their index, to check exactly once."""

    def __getitem__(self, index):
        image, target = super().__getitem__(index)
        return image, target, index


def strata_loader(args, dataset, class_to_idx, workers, epoch):
    ds = StrataDataset(args.server, dataset, batch_size=args.batch_size, seed=args.seed, epoch=epoch,
                       sampler="stratified", per_sample=True, transform=StrataSample(args.crop, class_to_idx))
    return ds.loader(num_workers=workers)


def imagefolder_loader(args, folder, workers, epoch):
    sampler = torch.utils.data.distributed.DistributedSampler(folder, num_replicas=1, rank=0, shuffle=True,
                                                              seed=args.seed)
    sampler.set_epoch(epoch)
    return torch.utils.data.DataLoader(folder, batch_size=args.batch_size, sampler=sampler, num_workers=workers)


def tiny_cnn(classes):
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, stride=2, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(16, 32, 3, stride=2, padding=1), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(32, classes))


def run(args, pipeline, make_loader, workers, total, shares):
    """Trains --epochs epochs; returns the figures of the run."""
    model = tiny_cnn(len(shares))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    seconds, images, steps, once, loss = 0.0, 0, 0, True, float("nan")  # loss: the last epoch's mean
    compositions = []
    for epoch in range(args.epochs):
        ids, total_loss = [], 0.0
        started = time.perf_counter()
        for x, y, index in make_loader(workers, epoch):
            optimizer.zero_grad()
            out = model(x)
            loss_t = torch.nn.functional.cross_entropy(out, y)
            loss_t.backward()
            optimizer.step()
            total_loss += float(loss_t) * len(y)
            ids.extend(index.tolist())
            if epoch == 0:
                compositions.append(Counter(y.tolist()))
            steps += 1
        seconds += time.perf_counter() - started
        images += len(ids)
        loss = total_loss / max(1, len(ids))
        once = once and sorted(ids) == list(range(total))
    full = [c for c in compositions if sum(c.values()) == args.batch_size]  # a short last batch aside
    deviation = max((abs(c.get(k, 0) - args.batch_size * p) for c in full for k, p in enumerate(shares)),
                    default=0.0)
    rare = len(shares) - 1
    return {"pipeline": pipeline, "workers": workers, "images": images, "seconds": seconds,
            "images_per_s": images / seconds, "steps": steps, "loss": loss, "exactly_once": once,
            "max_deviation": deviation, "batches": len(full),
            "batches_without_rare": sum(1 for c in full if c.get(rare, 0) == 0),
            "first_batches": [[c.get(k, 0) for k in range(len(shares))] for c in compositions[:3]]}


def report(r, rare_name):
    print(f"{r['pipeline']:<11} workers={r['workers']}: {r['images']} images in {r['seconds']:.2f}s = "
          f"{r['images_per_s']:.0f} images/s, {r['steps']} steps, mean loss {r['loss']:.3f}, "
          f"exactly once: {'yes' if r['exactly_once'] else 'NO'}", flush=True)
    for k, counts in enumerate(r["first_batches"]):
        print(f"    batch {k} classes: {' '.join(str(n) for n in counts)}")
    print(f"    worst deviation from the class shares in a full batch: {r['max_deviation']:.2f} images; "
          f"batches without {rare_name}: {r['batches_without_rare']} of {r['batches']}", flush=True)


def main(argv=None):
    args = parse_args(argv)
    temporary = None
    if args.dir is None:
        temporary = tempfile.TemporaryDirectory(prefix="strata-images-")
        args.dir = temporary.name
    generate(args.dir, args.images, args.classes, args.seed)
    if args.generate_only:
        return 0
    folder = IndexedImageFolder(args.dir, transform=train_transform(args.crop))
    sizes = Counter(folder.targets)
    shares = [sizes[k] / len(folder) for k in range(len(folder.classes))]
    print(f"{len(folder)} JPEG files in {len(folder.classes)} classes under {args.dir}: "
          f"{' '.join(f'{name}={sizes[k]}' for k, name in enumerate(folder.classes))}", flush=True)

    dataset = ingest(strata.Client(args.server), args.dataset, args.dir)
    print(f"ingested as {dataset}", flush=True)

    # strata numbers samples 0..n-1 in arrival order: ids and ImageFolder indices both cover range(n).
    makers = {
        "strata": lambda workers, epoch: strata_loader(args, dataset, folder.class_to_idx, workers, epoch),
        "imagefolder": lambda workers, epoch: imagefolder_loader(args, folder, workers, epoch),
    }
    pipelines = args.pipelines.split(",")
    if "strata" in pipelines and any(int(w) > 0 for w in args.workers.split(",")):
        # Once per process, as importing torch is: the fork server strata's workers start from.
        started = time.perf_counter()
        warm = strata.torch.worker_context().Process(target=int)  # a no-op child: the server has preloaded
        warm.start()
        warm.join()
        print(f"strata's worker fork server started in {time.perf_counter() - started:.2f}s (once per process)",
              flush=True)
    results = []
    for workers in [int(w) for w in args.workers.split(",")]:
        runs = {p: [] for p in pipelines}
        for _ in range(args.repeats):
            for pipeline in pipelines:  # interleaved, so that load on the machine hits both alike
                r = run(args, pipeline, makers[pipeline], workers, len(folder), shares)
                report(r, folder.classes[-1])
                runs[pipeline].append(r)
        for p in pipelines:  # the best run, with every run's rate and their median
            rates = [r["images_per_s"] for r in runs[p]]
            best = max(runs[p], key=lambda r: r["images_per_s"])
            results.append(dict(best, rates=rates, median_images_per_s=statistics.median(rates),
                                exactly_once=all(r["exactly_once"] for r in runs[p])))

    # Best and median of the runs: on a shared machine the median is the steadier figure.
    both = set(pipelines) == {"strata", "imagefolder"}
    print()
    print(f"{'workers':>7} " + " ".join(f"{p + ' images/s best, median':>34}" for p in pipelines) +
          ("   strata/imagefolder best, median" if both else ""))
    for workers in sorted({r["workers"] for r in results}):
        row = {r["pipeline"]: r for r in results if r["workers"] == workers}
        line = f"{workers:>7} " + " ".join(
            f"{row[p]['images_per_s']:>26.0f}, {row[p]['median_images_per_s']:>6.0f}" for p in pipelines)
        if both:
            s, f = row["strata"], row["imagefolder"]
            line += (f"   {s['images_per_s'] / f['images_per_s']:>24.2f}x, "
                     f"{s['median_images_per_s'] / f['median_images_per_s']:.2f}x")
        print(line)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    ok = all(r["exactly_once"] and r["steps"] > 0 for r in results)
    print(f"every run saw every image exactly once: {'yes' if ok else 'NO'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
