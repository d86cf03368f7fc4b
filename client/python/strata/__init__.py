"""strata: minibatches from a strata cluster, zero-copy into numpy and PyTorch.

    import strata
    client = strata.Client("127.0.0.1:7400")
    for batch in client.stream("cats", batch_size=64, rank=0, world=1, seed=1, epoch=0):
        ids = batch.ids                  # numpy uint64, shares the batch's memory
        payload = batch.payload          # numpy uint8 over the payload, no copy
        x = batch.torch()                # torch uint8 tensor over the same memory (DLPack)
        first = bytes(batch.sample(0))   # one sample's bytes

The PyTorch dataset is in strata.torch (imported on first use, since torch is
slow to import): ``from strata.torch import StrataDataset``.
"""

from ._strata import Batch, Client, Error, Stream, parse_resume_token, staging_path, tune_allocator

__all__ = ["Batch", "Client", "Error", "Stream", "parse_resume_token", "staging_path", "tune_allocator"]


def _batch_torch(self):
    """The payload as a 1-D torch.uint8 tensor in the batch's memory (a CUDA
    tensor for device-staged batches), through DLPack: no copy."""
    import torch.utils.dlpack

    return torch.utils.dlpack.from_dlpack(self)


def _batch_numpy(self):
    """The payload as a read-only numpy uint8 array in host memory (no copy)."""
    return self.payload


Batch.torch = _batch_torch
Batch.numpy = _batch_numpy
