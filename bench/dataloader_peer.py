"""Peer for bench/peers.sh: PyTorch's DataLoader with DistributedSampler
reading one file per sample, as a trainer without strata would.

Usage: /usr/bin/python3 bench/dataloader_peer.py DIR --batch-size B
           [--workers 2] [--world 1] [--rank 0] [--seed 0]

DIR is a folder tree (DIR/<label>/<file>), the layout strata-make-dataset
--format folder writes. Prints one line:
    samples=N bytes=B seconds=S samples_per_s=X mb_per_s=Y
"""
import argparse
import os
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class FilePerSample(Dataset):
    def __init__(self, root):
        self.files = []
        self.labels = []
        for label in sorted(os.listdir(root)):
            sub = os.path.join(root, label)
            if not os.path.isdir(sub):
                continue
            for name in sorted(os.listdir(sub)):
                self.files.append(os.path.join(sub, name))
                self.labels.append(label)
        if not self.files:
            raise SystemExit(f"dataloader_peer: no sample files under {root}")

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        with open(self.files[i], "rb") as f:
            return f.read(), self.labels[i]


def collate(items):
    # One buffer per batch with offsets, like a strata batch: payloads packed
    # into a byte tensor the trainer can slice.
    payloads = [p for p, _ in items]
    sizes = torch.tensor([len(p) for p in payloads], dtype=torch.int64)
    data = torch.frombuffer(bytearray(b"".join(payloads)), dtype=torch.uint8)
    return data, sizes, [label for _, label in items]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--batch-size", type=int, required=True)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--world", type=int, default=1)
    ap.add_argument("--rank", type=int, default=0)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    ds = FilePerSample(a.dir)
    sampler = DistributedSampler(ds, num_replicas=a.world, rank=a.rank, shuffle=True, seed=a.seed)
    loader = DataLoader(ds, batch_size=a.batch_size, sampler=sampler, num_workers=a.workers,
                        collate_fn=collate, persistent_workers=False)
    samples = 0
    nbytes = 0
    start = time.perf_counter()
    for data, sizes, _ in loader:
        samples += int(sizes.numel())
        nbytes += int(data.numel())
    seconds = time.perf_counter() - start
    print(f"samples={samples} bytes={nbytes} seconds={seconds:.3f} "
          f"samples_per_s={samples / seconds:.0f} mb_per_s={nbytes / seconds / 1e6:.1f}")


if __name__ == "__main__":
    sys.exit(main())
