"""strata.torch: a PyTorch IterableDataset fed by a strata cluster.

    from strata.torch import StrataDataset
    ds = StrataDataset("127.0.0.1:7400", "cats", batch_size=64, seed=1, decode=my_decode)
    loader = ds.loader(num_workers=4)             # a DataLoader that keeps ds.state_dict() current
    for epoch in range(epochs):
        ds.set_epoch(epoch)
        for batch in loader:
            ...
            checkpoint = {"data": ds.state_dict(), ...}   # resumes after this batch

Batches: each item is one rank's batch for one step, `decode(strata.Batch)`
(strata batches server-side: the DataLoader's batch_size is None).

Samples (per_sample=True): each item is `transform(sample)` for one sample, in
plan order; ds.loader() collates each step's samples into one batch, so every
collated batch is exactly one strata batch (the stratified sampler's
composition holds per collated batch). A sample is a dict
{"id": int, "label": str, "stratum": str, "data": bytes (the whole payload),
"fields": {name: bytes}}.

Workers: with num_workers = N > 1, worker k takes the rank's steps k, k + N,
k + 2N, ... (one short stream per step, the next one opened before the current
is handed over), so the DataLoader's round-robin yields them in plan order:
the same sequence as num_workers=0, each sample once. Decode and transform run
in the workers. Iterate through ds.loader() (a strata.torch.StrataDataLoader)
so that state_dict() follows what the loader has yielded; a plain DataLoader
keeps the order but state_dict() then sees only iteration in this process.
Workers start from a fork server (worker_context()): a clean process, started
once, that has imported torch, strata.torch and the main script's modules, so
a worker starts quickly without inheriting this process's gRPC state (which
does not survive fork). Decode and transform are pickled to the workers, so
they must be picklable (module-level functions or classes).

Rank and world come from torch.distributed when it is initialised, else 0 and
1, unless given. The global batch is batch_size x world; every sample is
delivered exactly once per epoch across ranks (drop_last=False), and the order
does not depend on the world size.
"""

import os
import sys
import types

import torch
import torch.distributed
import torch.utils.data
from torch.utils.data import default_collate, default_convert

import strata

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


def samples_of(batch):
    """The samples of a strata.Batch as dicts (see the module's docstring); copies the bytes."""
    ids, labels, strata = batch.ids.tolist(), batch.labels, batch.strata
    out = []
    for i in range(len(batch)):
        out.append({"id": ids[i], "label": labels[i], "stratum": strata[i] if strata else "",
                    "data": bytes(batch.sample(i)),
                    "fields": {name: bytes(batch.field(i, name)) for name in batch.field_names(i)}})
    return out


_PRELOAD = ("torch", "strata.torch")


def _main_imports():
    """The modules the main script took names from (`import torchvision`, `from
    PIL import Image`): what a worker imports again when it runs the main
    script, as workers of a spawn or forkserver context do."""
    main = sys.modules.get("__main__")
    names = []
    for value in list(vars(main).values()) if main is not None else ():
        try:
            if isinstance(value, types.ModuleType):
                name = value.__name__
            elif isinstance(value, type) or callable(value):
                name = getattr(value, "__module__", None)
            else:
                continue
        except Exception:  # an object whose attributes misbehave: not a module to preload
            continue
        if isinstance(name, str) and name not in ("__main__", "__mp_main__", "builtins") and name not in names:
            names.append(name)
    return names


def worker_context():
    """The multiprocessing context StrataDataLoader starts its workers with: a
    fork server that has imported torch, strata.torch and the modules the main
    script imports. It starts once per process, with the first workers, and
    never connects to strata, so workers forked from it start clean (gRPC does
    not survive fork) and quickly: a spawned worker imports torch and the main
    script's modules again, every epoch. Modules already given to
    multiprocessing.set_forkserver_preload are kept."""
    import multiprocessing
    import multiprocessing.forkserver as forkserver

    context = multiprocessing.get_context("forkserver")
    # Python's fork server drops the main script's path, so "__main__" in the
    # preload list does nothing; preloading what the script imports instead
    # leaves the worker only the script's own top level to run.
    given = list(getattr(forkserver._forkserver, "_preload_modules", None) or [])
    context.set_forkserver_preload(given + [m for m in (*_PRELOAD, *_main_imports()) if m not in given])
    return context


class _Stamped:
    """An item from the dataset with the resume token after its step (None
    inside a step), for StrataDataLoader to unwrap; picklable."""

    __slots__ = ("item", "token")

    def __init__(self, item, token):
        self.item = item
        self.token = token

    def __reduce__(self):
        return (_Stamped, (self.item, self.token))


class StrataDataset(torch.utils.data.IterableDataset):
    """One rank's batches (or samples) of a strata dataset.

    address, dataset: the stratad ("host:port") and dataset ("name" or "name@N").
    batch_size: samples per rank per step. seed, epoch: the epoch plan's seed and
    the epoch to iterate (set_epoch changes it). decode: callable(strata.Batch)
    -> item; default_decode by default. per_sample: yield samples instead, each
    through transform (default: the sample dict). rank, world: default from
    torch.distributed. device: None (batches from the network), or 'cpu' /
    'cuda[:N]' for a staging ring (see strata.Client.stream; not with workers).
    sampler, drop_last, prefetch_depth, copy_threads: as in strata.Client.stream.
    """

    def __init__(self, address, dataset, batch_size, seed=0, epoch=0, decode=None, rank=None, world=None,
                 drop_last=False, sampler=None, device=None, prefetch_depth=2, connect_timeout_ms=5000,
                 per_sample=False, transform=None, copy_threads=0):
        super().__init__()
        if per_sample and decode is not None:
            raise ValueError("per_sample=True takes transform=, not decode=")
        if transform is not None and not per_sample:
            raise ValueError("transform= is for per_sample=True; batches take decode=")
        # Checked here, not first in a worker or in len().
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be an int of 1 or more, not {batch_size!r}")
        if world is not None and (not isinstance(world, int) or world < 1):
            raise ValueError(f"world must be an int of 1 or more, not {world!r}")
        if rank is not None and (not isinstance(rank, int) or rank < 0 or (world is not None and rank >= world)):
            raise ValueError(f"rank must be an int from 0 to world - 1, not {rank!r}")
        self.address = address
        self.dataset = dataset
        self.batch_size = batch_size
        self.seed = seed
        self.epoch = epoch
        self.decode = decode if decode is not None else default_decode
        self.per_sample = per_sample
        self.transform = transform
        self.drop_last = drop_last
        self.sampler = sampler
        self.device = device
        self.prefetch_depth = prefetch_depth
        self.copy_threads = copy_threads
        self.connect_timeout_ms = connect_timeout_ms
        self._rank = rank
        self._world = world
        self._client = None
        self._client_pid = 0
        self._len = None
        self._stamp = False        # items wrapped in _Stamped (set by StrataDataLoader)
        self._resume_token = None  # where the next iteration starts (load_state_dict), or None: the epoch's start
        self._position = None      # after the last batch yielded, in the current epoch

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_client"] = None  # a connection is per process
        return state

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
        if self._client is None or self._client_pid != os.getpid():
            if strata._connected_in_pid not in (0, os.getpid()) and torch.utils.data.get_worker_info() is not None:
                raise RuntimeError(
                    "this DataLoader worker was forked from a process that had connected to strata, and gRPC "
                    "does not work after fork: use ds.loader() (starts its workers from a fork server) or "
                    "DataLoader(..., multiprocessing_context=strata.torch.worker_context())")
            self._client = strata.Client(self.address, connect_timeout_ms=self.connect_timeout_ms)
            self._client_pid = os.getpid()
        return self._client

    def set_epoch(self, epoch):
        """Iterate `epoch` next (as DistributedSampler.set_epoch): from its start,
        or, when a state of this very epoch was loaded with load_state_dict and
        not yet iterated, from where that state left off. So the usual loop,
        load_state_dict(ckpt) and then set_epoch(e) for e from ckpt's epoch,
        resumes the interrupted epoch instead of starting it again."""
        if epoch != self.epoch:
            self._resume_token = None
        self.epoch = epoch
        self._position = None

    def __len__(self):
        """Steps in an epoch, which every rank iterates (a rank left without
        samples in a short last step gets an empty batch); with per_sample,
        those steps times batch_size (an upper bound: the last step may be
        short). Computed once, with a short-lived client, so that forked workers
        inherit no connection: from the dataset's size for the default shuffle,
        and from the plan's first batch for other samplers, whose epoch_samples
        or min_per_batch change the number of steps."""
        if self._len is None:
            client = strata.Client(self.address, connect_timeout_ms=self.connect_timeout_ms)
            if self.sampler is None or self.sampler == "shuffle":
                samples = client.describe(self.dataset)["dataset"]["samples"]
                global_batch = self.batch_size * self.world
                steps = samples // global_batch
                if not self.drop_last and samples % global_batch:
                    steps += 1
            else:
                stream = client.stream(self.dataset, self.batch_size, seed=self.seed, epoch=self.epoch, max_steps=1,
                                       **self._options())
                try:
                    first = next(stream, None)
                    steps = first.steps_in_epoch if first is not None else 0
                except strata.Error as e:
                    # An epoch the remainder empties has no steps; iterating it raises the same error.
                    if "the epoch is empty" not in str(e):
                        raise
                    steps = 0
                finally:
                    stream.close()
            self._len = steps
        return self._len * self.batch_size if self.per_sample else self._len

    def loader(self, **kwargs):
        """A StrataDataLoader over this dataset (DataLoader keyword arguments)."""
        return StrataDataLoader(self, **kwargs)

    # -- iteration --------------------------------------------------------

    def _options(self):
        return dict(rank=self.rank, world=self.world, sampler=self.sampler, drop_last=self.drop_last)

    def _resume_checks(self):
        """What resume() checks the token against: this dataset's sampler and
        remainder (a token of another plan raises strata.Error InvalidArgument)."""
        return dict(sampler=self.sampler if self.sampler is not None else "shuffle", drop_last=self.drop_last)

    def _steps(self, token):
        """(batch, token after it) for this process's share of the rank's steps."""
        info = torch.utils.data.get_worker_info()
        workers, worker = (info.num_workers, info.id) if info is not None else (1, 0)
        client = self.client()
        if workers == 1:
            if token is not None:
                stream = client.resume(token, self.batch_size, rank=self.rank, world=self.world,
                                       device=self.device, prefetch_depth=self.prefetch_depth,
                                       copy_threads=self.copy_threads, **self._resume_checks())
            else:
                stream = client.stream(self.dataset, self.batch_size, seed=self.seed, epoch=self.epoch,
                                       device=self.device, prefetch_depth=self.prefetch_depth,
                                       copy_threads=self.copy_threads, **self._options())
            try:
                for batch in stream:
                    yield batch, stream.resume_token()
            finally:
                stream.close()
            return
        if self.device is not None:
            raise ValueError("device staging runs in the training process: use device=None with DataLoader workers")
        yield from self._worker_steps(client, token, workers, worker)

    def _worker_steps(self, client, token, workers, worker):
        """Steps worker, worker + workers, ... from the token's step (or 0), one
        short stream each, the next opened before the current one is yielded."""
        def open_step(step, plan):
            if plan is not None:
                return client.resume(plan, self.batch_size, rank=self.rank, world=self.world, step=step, max_steps=1,
                                     **self._resume_checks())
            return client.stream(self.dataset, self.batch_size, seed=self.seed, epoch=self.epoch, start_step=step,
                                 max_steps=1, **self._options())

        step = (_strata.parse_resume_token(token)["step"] if token is not None else 0) + worker
        plan = token  # after the first batch: a token that pins the dataset version and the plan
        stream = None
        try:
            stream = open_step(step, plan)
            batch = next(stream, None)
        except strata.Error as e:
            if stream is not None:
                stream.close()
            # Resumed near (or at) the epoch's end: this worker's first step is
            # past it, and it has nothing to yield (the others may).
            if worker > 0 and e.code == "InvalidArgument" and "past the end of the epoch" in str(e):
                return
            raise
        try:
            while batch is not None:
                after = stream.resume_token()
                plan = plan or after
                step += workers
                following = open_step(step, plan) if step < batch.steps_in_epoch else iter(())
                stream.close()
                stream = following
                yield batch, after
                batch = next(stream, None)
        finally:
            if hasattr(stream, "close"):
                stream.close()

    def __iter__(self):
        # What the iteration starts from is taken now, not at the first next().
        token, self._resume_token = self._resume_token, None
        self._position = token
        return self._iterate(token, self._stamp)

    def _iterate(self, token, stamp):
        for batch, after in self._steps(token):
            if not self.per_sample:
                item = self.decode(batch)
                self._position = after
                yield _Stamped(item, after) if stamp else item
                continue
            samples = samples_of(batch)
            if not samples:
                # This rank's share of a short last step is empty. The loader
                # still gets a marker, so that it yields an empty collated
                # batch and every rank iterates the same steps (DDP ranks that
                # disagree on the count of steps hang in their collectives).
                self._position = after
                if stamp:
                    yield _Stamped(_EMPTY_STEP, after)
                continue
            for k, sample in enumerate(samples):
                item = self.transform(sample) if self.transform is not None else sample
                last = k + 1 == len(samples)
                if last:
                    self._position = after
                yield _Stamped(item, after if last else None) if stamp else item

    def state_dict(self):
        """Where to continue: after the last batch (step) yielded by this dataset,
        or by its StrataDataLoader.

        {"resume_token": str or None, "epoch": int, "seed": int, "dataset": str,
        "batch_size": int}. A token of None means the start of the epoch; after
        the last batch, the token says the epoch is complete (resuming from it
        yields nothing until set_epoch)."""
        token = self._resume_token if self._resume_token is not None else self._position
        return {"resume_token": token, "epoch": self.epoch, "seed": self.seed, "dataset": self.dataset,
                "batch_size": self.batch_size}

    def load_state_dict(self, state):
        """The next iteration continues from `state` (mid-epoch if it was saved mid-epoch).
        The world size may differ if it divides the same global batch. A state of
        another dataset raises ValueError; one of another sampler or drop_last
        raises strata.Error (InvalidArgument) when iteration starts. The token
        decides which dataset the state is of: "cats" and "cats@1" take each
        other's states when the token is of cats@1."""
        name, _, pinned = self.dataset.partition("@")
        token = state.get("resume_token")
        if token is not None:
            parts = _strata.parse_resume_token(token)
            if parts["dataset"] != name or (pinned and parts["version"] != int(pinned)):
                raise ValueError("the state's resume token is of %s@%d, and this StrataDataset streams %r" %
                                 (parts["dataset"], parts["version"], self.dataset))
        elif state.get("dataset", self.dataset).partition("@")[0] != name:
            raise ValueError("the state is of dataset %r, and this StrataDataset streams %r" %
                             (state["dataset"], self.dataset))
        self.epoch = state["epoch"]
        self.seed = state.get("seed", self.seed)
        self._resume_token = state.get("resume_token")
        self._position = None


class _UnstampBatch:
    """collate_fn for whole batches: (converted item, token)."""

    def __init__(self, convert):
        self.convert = convert

    def __call__(self, stamped):
        return self.convert(stamped.item), stamped.token


# Stands for a rank's empty share of a short last step, in place of samples.
_EMPTY_STEP = object()


class _UnstampSamples:
    """collate_fn for samples: (collated step, token after it). An empty step
    collates to collate_fn([]), or to [] where that raises (default_collate
    does: it cannot know the structure of no samples)."""

    def __init__(self, collate):
        self.collate = collate

    def __call__(self, stamped):
        token = next((s.token for s in reversed(stamped) if s.token is not None), None)
        items = [s.item for s in stamped if s.item is not _EMPTY_STEP]
        if not items:
            try:
                return self.collate([]), token
            except (IndexError, TypeError, ValueError, RuntimeError):
                return [], token
        return self.collate(items), token


class StrataDataLoader(torch.utils.data.DataLoader):
    """A DataLoader over a StrataDataset that keeps its state_dict() current.

    Batches: batch_size is None and collate_fn (default: default_convert) runs
    on each decoded batch. Samples (per_sample=True): batch_size is the
    dataset's, and collate_fn (default: default_collate) gets exactly one
    step's samples. Any other DataLoader argument passes through, except
    persistent_workers (each epoch's workers start from the dataset's position).
    Workers come from worker_context() unless multiprocessing_context says
    otherwise: gRPC does not survive fork once this process has connected.
    """

    def __init__(self, dataset, collate_fn=None, **kwargs):
        if not isinstance(dataset, StrataDataset):
            raise TypeError("StrataDataLoader takes a StrataDataset")
        if kwargs.get("persistent_workers"):
            raise ValueError("StrataDataLoader starts workers each epoch: persistent_workers is not supported")
        if kwargs.get("num_workers", 0) > 0:
            # Forked workers would inherit this process's gRPC state, which does not survive fork.
            kwargs.setdefault("multiprocessing_context", worker_context())
        if dataset.per_sample:
            if kwargs.setdefault("batch_size", dataset.batch_size) != dataset.batch_size:
                raise ValueError(f"with per_sample=True the loader's batch_size must be the dataset's "
                                 f"({dataset.batch_size}), so that each collated batch is one strata batch")
            kwargs["drop_last"] = False  # the dataset's drop_last decides; a short last step stays whole
            collate = _UnstampSamples(collate_fn or default_collate)
        else:
            if kwargs.setdefault("batch_size", None) is not None:
                raise ValueError("a StrataDataset of batches takes batch_size=None (strata batches server-side)")
            collate = _UnstampBatch(collate_fn or default_convert)
        super().__init__(dataset, collate_fn=collate, **kwargs)

    def __iter__(self):
        ds = self.dataset
        # Workers start in super().__iter__(), with the dataset as it is then: rank
        # and world fixed here, since torch.distributed is not initialised in them.
        given = ds._rank, ds._world
        ds._stamp, ds._rank, ds._world = True, ds.rank, ds.world
        try:
            inner = super().__iter__()
        finally:
            ds._stamp, (ds._rank, ds._world) = False, given
        if self.num_workers > 0:  # the workers took the resume position; this process follows them
            ds._position, ds._resume_token = ds._resume_token, None
        return self._follow(inner)

    def _follow(self, inner):
        ds = self.dataset
        version = None
        for item, token in inner:
            if token is not None:
                parts = _strata.parse_resume_token(token)
                if version is None:
                    version = parts["version"]
                elif parts["version"] != version:
                    raise _strata.Error(f"DataLoader workers streamed versions {version} and {parts['version']} "
                                        f"of {ds.dataset}: name the version (dataset@N)")
                ds._position = token
            yield item
