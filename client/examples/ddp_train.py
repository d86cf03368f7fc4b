#!/usr/bin/python3
"""ddp_train.py: PyTorch DistributedDataParallel training fed by strata.

W processes (gloo, CPU) each read their rank's share of every global batch
through strata.torch.StrataDataset and train a small classifier on byte
histograms of the payloads. With --interrupt-at EPOCH:STEP the job checkpoints
after that step and every process exits, as a preempted job would; the script
then starts W fresh processes that load the checkpoint and continue mid-epoch.
At the end of each epoch it checks, across ranks and across the interruption,
that every sample arrived exactly once.

    /usr/bin/python3 client/examples/ddp_train.py --server 127.0.0.1:7400 --dataset demo \\
        --world 2 --batch-size 32 --epochs 2 --interrupt-at 0:10 --checkpoint-dir /tmp/ckpt

Needs PYTHONPATH=build/client/python (client/examples/run_ddp_example.sh sets
everything up: a stratad, a generated dataset, this script).
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel

import strata
from strata.torch import StrataDataset

BINS = 16  # features: a histogram of payload byte values


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--server", default="127.0.0.1:7400")
    p.add_argument("--dataset", required=True)
    p.add_argument("--world", type=int, default=2, help="processes (ranks)")
    p.add_argument("--batch-size", type=int, default=32, help="samples per rank per step")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--lr", type=float, default=0.5)
    p.add_argument("--checkpoint-dir", default=None, help="where checkpoints go (default: a temporary directory)")
    p.add_argument("--interrupt-at", default=None, metavar="EPOCH:STEP",
                   help="checkpoint after this step, stop every process, then resume in new ones")
    p.add_argument("--report", default=None, help="write per-epoch, per-rank sample ids and figures as JSON here")
    return p.parse_args(argv)


def histogram_decoder(classes):
    """A decode hook: payload bytes -> (features [n, BINS], labels [n], ids [n])."""
    index = {name: k for k, name in enumerate(classes)}

    def decode(batch):
        payload = batch.torch().long()                        # zero-copy view, widened
        sizes = torch.from_numpy(batch.sizes.astype("int64"))
        n = len(batch)
        sample_of_byte = torch.repeat_interleave(torch.arange(n), sizes)
        counts = torch.bincount(sample_of_byte * BINS + (payload >> 4), minlength=n * BINS).view(n, BINS)
        features = counts.float() / sizes.clamp(min=1).unsqueeze(1).float()
        labels = torch.tensor([index[label] for label in batch.labels], dtype=torch.long)
        return features, labels, torch.from_numpy(batch.ids.astype("int64"))

    return decode


def checkpoint_path(directory, rank):
    return Path(directory) / f"rank{rank}.pt"


def train(rank, args, classes, init_method, phase):
    dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=args.world)
    torch.manual_seed(0)
    model = DistributedDataParallel(torch.nn.Sequential(
        torch.nn.Linear(BINS, 64), torch.nn.ReLU(), torch.nn.Linear(64, len(classes))))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    dataset = StrataDataset(args.server, args.dataset, batch_size=args.batch_size, seed=args.seed,
                            decode=histogram_decoder(classes))
    assert (dataset.rank, dataset.world) == (rank, args.world)
    loader = torch.utils.data.DataLoader(dataset, batch_size=None, num_workers=0)

    # Per epoch, this rank's running figures; kept across the interruption.
    state = {"epoch": 0, "ids": [], "loss": 0.0, "correct": 0, "samples": 0, "history": []}
    ckpt = checkpoint_path(args.checkpoint_dir, rank)
    resuming = phase == "resume"
    if resuming:
        saved = torch.load(ckpt)
        model.module.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        dataset.load_state_dict(saved["data"])
        state = saved["progress"]
        print(f"rank {rank}: resumed at epoch {state['epoch']} after step {saved['step']} "
              f"({len(state['ids'])} samples already seen this epoch)", flush=True)
    resumed_epoch = state["epoch"] if resuming else None
    interrupt = tuple(int(x) for x in args.interrupt_at.split(":")) if args.interrupt_at else None

    for epoch in range(state["epoch"], args.epochs):
        if not resuming:
            dataset.set_epoch(epoch)
            state.update(epoch=epoch, ids=[], loss=0.0, correct=0, samples=0)
        resuming = False
        started = time.monotonic()
        stop_after = None
        with model.join():  # a short last global batch may leave a rank one step fewer
            for features, labels, ids in loader:
                optimizer.zero_grad()
                logits = model(features)
                loss = torch.nn.functional.cross_entropy(logits, labels)
                loss.backward()
                optimizer.step()
                state["loss"] += float(loss) * len(labels)
                state["correct"] += int((logits.argmax(1) == labels).sum())
                state["samples"] += len(labels)
                state["ids"].extend(ids.tolist())
                step = strata.parse_resume_token(dataset.state_dict()["resume_token"])["step"] - 1
                if phase == "first" and interrupt == (epoch, step):
                    stop_after = step  # every rank reaches the same step: they leave together
                    break
        if stop_after is not None:
            torch.save({"model": model.module.state_dict(), "optimizer": optimizer.state_dict(),
                        "data": dataset.state_dict(), "progress": state, "step": stop_after}, ckpt)
            print(f"rank {rank}: checkpointed after epoch {epoch} step {stop_after}; stopping", flush=True)
            leave()
        seconds = time.monotonic() - started
        totals = torch.tensor([state["loss"], state["correct"], state["samples"]], dtype=torch.float64)
        dist.all_reduce(totals)
        all_ids = [None] * args.world
        dist.all_gather_object(all_ids, state["ids"])
        state["history"].append({"epoch": epoch, "ids": all_ids, "loss": totals[0].item() / totals[2].item(),
                                 "accuracy": totals[1].item() / totals[2].item(), "seconds": seconds,
                                 "resumed": epoch == resumed_epoch})
    if rank == 0 and args.report:
        Path(args.report).write_text(json.dumps({"epochs": state["history"], "classes": classes}))
    if rank == 0:
        Path(args.checkpoint_dir, "done").write_text(json.dumps(state["history"]))
    leave()


def leave():
    """Ends this rank's process once every rank is here, without tearing DDP
    down: torch 1.13 can deadlock destroying a gloo-backed
    DistributedDataParallel (its reducer joins gloo's thread while holding the
    GIL that thread needs). Everything this process writes is closed by now."""
    dist.barrier()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def rendezvous(directory, phase):
    """Where this phase's ranks meet: a file, not a TCP port. The ranks run on
    this machine, and a port picked free here could be taken by another
    process before rank 0 binds it (a race seen when tests run in parallel)."""
    path = Path(directory) / f"rendezvous-{phase}"
    path.unlink(missing_ok=True)  # the file store needs a new or empty file
    return f"file://{path}"


def main(argv=None):
    args = parse_args(argv)
    if args.checkpoint_dir is None:
        import tempfile
        args.checkpoint_dir = tempfile.mkdtemp(prefix="strata-ddp-")
    Path(args.checkpoint_dir).mkdir(parents=True, exist_ok=True)
    info = strata.Client(args.server).describe(args.dataset)["dataset"]
    classes = sorted(c["key"] for c in info["label_counts"])
    n = info["samples"]
    print(f"training on {info['name']}@{info['version']}: {n} samples, {len(classes)} classes, "
          f"{args.world} ranks x batch {args.batch_size}, {args.epochs} epochs (gloo, CPU)", flush=True)

    phases = ["first", "resume"] if args.interrupt_at else ["all"]
    for phase in phases:
        mp.spawn(train, args=(args, classes, rendezvous(args.checkpoint_dir, phase), phase), nprocs=args.world, join=True)
        if phase == "first":
            print("all ranks stopped; starting new processes from the checkpoint", flush=True)

    history = json.loads(Path(args.checkpoint_dir, "done").read_text())
    ok = True
    for record in history:
        per_rank = [set(ids) for ids in record["ids"]]
        delivered = sum(len(ids) for ids in record["ids"])
        disjoint = all(not (per_rank[a] & per_rank[b]) for a in range(len(per_rank)) for b in range(a))
        once = delivered == n and set().union(*per_rank) == set(range(n)) and disjoint
        ok = ok and once
        print(f"epoch {record['epoch']}: loss {record['loss']:.3f}  accuracy {100 * record['accuracy']:5.1f}%  "
              f"{delivered} samples ({'resumed mid-epoch; ' if record.get('resumed') else ''}"
              f"{record['seconds']:.2f}s)  ranks disjoint: {'yes' if disjoint else 'NO'}  "
              f"every sample exactly once: {'yes' if once else 'NO'}", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
