"""One rank of the per-sample DDP test (test_ddp.py): joins a gloo group,
iterates a per-sample StrataDataset with the stratified sampler through two
DataLoader workers, and writes each collated batch's ids and strata as JSON.
Usage: ddp_per_sample.py ADDRESS DATASET RANK WORLD PORT OUT.json"""

import json
import sys

import torch.distributed as dist

from strata.torch import StrataDataset


def main():
    address, dataset, rank, world, port, out = sys.argv[1:7]
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=int(rank), world_size=int(world))
    ds = StrataDataset(address, dataset, batch_size=25, seed=12, sampler="stratified", per_sample=True)
    assert (ds.rank, ds.world) == (int(rank), int(world))
    batches = [{"ids": b["id"].tolist(), "strata": list(b["stratum"])} for b in ds.loader(num_workers=2)]
    dist.barrier()
    dist.destroy_process_group()
    with open(out, "w") as f:
        json.dump(batches, f)


if __name__ == "__main__":
    main()
