"""strata.torch: a PyTorch IterableDataset fed by a strata cluster.

    from strata.torch import StrataDataset
    ds = StrataDataset("127.0.0.1:7400", "cats", batch_size=64, seed=1, decode=my_decode)
    loader = torch.utils.data.DataLoader(ds, batch_size=None)   # ds yields whole batches
    for epoch in range(epochs):
        ds.set_epoch(epoch)
        for batch in loader:
            ...
            checkpoint = {"data": ds.state_dict(), ...}   # resumes after this batch

Each item is one rank's batch for one step (strata batches server-side, so use
batch_size=None in the DataLoader). Rank and world come from torch.distributed
when it is initialised, else 0 and 1, unless given. The global batch is
batch_size x world; every sample is delivered exactly once per epoch across
ranks (drop_last=False), and the order does not depend on the world size.

DataLoader workers: use num_workers=0 (or 1). strata already reads, batches
and prefetches on the servers and in a background thread of this process, so
worker processes add nothing; with more than one worker each would need its
own share of the epoch, and the plan shares an epoch between ranks only, so
iterating with several workers raises RuntimeError.
"""

import torch
import torch.distributed
import torch.utils.data

from . import _strata


def default_decode(batch):
    """A batch as a dict of tensors, sharing the payload's memory:
    ids (int64), labels (list of str), payload (uint8, on the batch's device),
    offsets and sizes (int64), step and epoch (int)."""
    return {
        "ids": torch.from_numpy(batch.ids.astype("int64")),
        "labels": batch.labels,
        "payload": batch.torch(),
        "offsets": torch.from_numpy(batch.offsets.astype("int64")),
        "sizes": torch.from_numpy(batch.sizes.astype("int64")),
        "step": batch.step,
        "epoch": batch.epoch,
    }


class StrataDataset(torch.utils.data.IterableDataset):
    """One rank's batches of a strata dataset, decoded by `decode`.

    address, dataset: the stratad ("host:port") and dataset ("name" or "name@N").
    batch_size: samples per rank per step. seed, epoch: the epoch plan's seed and
    the epoch to iterate (set_epoch changes it). decode: callable(strata.Batch)
    -> item; default_decode by default. rank, world: default from
    torch.distributed. device: None (batches from the network), or 'cpu' /
    'cuda[:N]' for a staging ring (see strata.Client.stream). sampler, drop_last,
    prefetch_depth: as in strata.Client.stream.
    """

    def __init__(self, address, dataset, batch_size, seed=0, epoch=0, decode=None, rank=None, world=None,
                 drop_last=False, sampler=None, device=None, prefetch_depth=2, connect_timeout_ms=5000):
        super().__init__()
        self.address = address
        self.dataset = dataset
        self.batch_size = batch_size
        self.seed = seed
        self.epoch = epoch
        self.decode = decode if decode is not None else default_decode
        self.drop_last = drop_last
        self.sampler = sampler
        self.device = device
        self.prefetch_depth = prefetch_depth
        self.connect_timeout_ms = connect_timeout_ms
        self._rank = rank
        self._world = world
        self._client = None
        self._resume_token = None  # where the next iteration starts (load_state_dict), or None: the epoch's start
        self._position = None      # after the last batch yielded, in the current epoch

    @property
    def rank(self):
        if self._rank is not None:
            return self._rank
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            return torch.distributed.get_rank()
        return 0

    @property
    def world(self):
        if self._world is not None:
            return self._world
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            return torch.distributed.get_world_size()
        return 1

    def client(self):
        """The dataset's strata.Client, connected on first use."""
        if self._client is None:
            self._client = _strata.Client(self.address, connect_timeout_ms=self.connect_timeout_ms)
        return self._client

    def set_epoch(self, epoch):
        """Iterate `epoch` next, from its start (as DistributedSampler.set_epoch)."""
        self.epoch = epoch
        self._resume_token = None
        self._position = None

    def __len__(self):
        """Steps this rank gets in an epoch (an upper bound with drop_last=False: a
        short last global batch may leave a rank one step fewer)."""
        samples = self.client().describe(self.dataset)["dataset"]["samples"]
        global_batch = self.batch_size * self.world
        steps = samples // global_batch
        if not self.drop_last and samples % global_batch:
            steps += 1
        return steps

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        if info is not None and info.num_workers > 1:
            raise RuntimeError(
                "StrataDataset does not shard between DataLoader workers: use num_workers=0 "
                "(strata already reads and prefetches in the background)")
        options = dict(rank=self.rank, world=self.world, drop_last=self.drop_last, sampler=self.sampler,
                       device=self.device, prefetch_depth=self.prefetch_depth)
        token, self._resume_token = self._resume_token, None
        if token is not None:
            stream = self.client().resume(token, self.batch_size, **options)
        else:
            stream = self.client().stream(self.dataset, self.batch_size, seed=self.seed, epoch=self.epoch, **options)
        self._position = token
        try:
            for batch in stream:
                self._position = stream.resume_token()
                yield self.decode(batch)
        finally:
            stream.close()

    def state_dict(self):
        """Where to continue: after the last batch this dataset yielded.

        {"resume_token": str or None, "epoch": int, "seed": int, "dataset": str,
        "batch_size": int}. A token of None means the start of the epoch; after
        the last batch, the token says the epoch is complete (resuming from it
        yields nothing until set_epoch)."""
        token = self._resume_token if self._resume_token is not None else self._position
        return {"resume_token": token, "epoch": self.epoch, "seed": self.seed, "dataset": self.dataset,
                "batch_size": self.batch_size}

    def load_state_dict(self, state):
        """The next iteration continues from `state` (mid-epoch if it was saved mid-epoch).
        The world size may differ if it divides the same global batch."""
        self.epoch = state["epoch"]
        self.seed = state.get("seed", self.seed)
        self._resume_token = state.get("resume_token")
        self._position = None
