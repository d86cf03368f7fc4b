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

numpy and torch are optional: without numpy (HAVE_NUMPY is False) ids, offsets,
sizes and payload are read-only memoryviews over the same memory.

Thread-safety: a Client may be shared by threads; a Stream is iterated by one
thread at a time. A Stream keeps its Client's connection alive, and a Batch
(and every view of it) its memory, so `for b in strata.Client(a).stream(...)`
is fine. Blocking calls release the GIL.

Ingest: keys, labels, attribute names and values are str, or UTF-8 bytes
(decoded); None or any other type raises strata.Error (InvalidArgument). Leave
a label or attribute out to have none.
"""

import os as _os
import re as _re

from ._strata import HAVE_NUMPY, Batch, Error, Stream, __version__, parse_resume_token, staging_path, tune_allocator
from ._strata import Client as _Client

# The process that first connected (gRPC cannot be used in a child forked
# after that; strata.torch checks it in DataLoader workers).
_connected_in_pid = 0


class Client(_Client):
    __doc__ = _Client.__doc__

    def __init__(self, *args, **kwargs):
        global _connected_in_pid
        if not _connected_in_pid:
            _connected_in_pid = _os.getpid()
        super().__init__(*args, **kwargs)


# The status codes' names, as strata.Error's .code gives them.
_CODES = ("Cancelled", "Unknown", "InvalidArgument", "DeadlineExceeded", "NotFound", "AlreadyExists",
          "PermissionDenied", "ResourceExhausted", "FailedPrecondition", "Aborted", "OutOfRange", "Unimplemented",
          "Internal", "Unavailable", "Corruption", "Unauthenticated", "IOError")
_CODE_IN_TRACEBACK = _re.compile(r"^strata\.Error: (%s): " % "|".join(_CODES), _re.MULTILINE)
_CODE_FIRST = _re.compile(r"(%s): " % "|".join(_CODES))


def _error_code(self):
    """The status code's name: NotFound, Unavailable, ... An error rebuilt from
    its message alone (a DataLoader worker's, which torch raises again in the
    main process as Error(text of the worker's traceback)) reads it from there;
    "Unknown" if the message does not say."""
    code = self.__dict__.get("_code")
    if code is None:
        text = str(self)
        found = _CODE_IN_TRACEBACK.findall(text)
        first = _CODE_FIRST.match(text)
        code = found[-1] if found else (first.group(1) if first else "Unknown")
    return code


def _set_error_code(self, code):
    self.__dict__["_code"] = code


Error.code = property(_error_code, _set_error_code)

__all__ = ["HAVE_NUMPY", "Batch", "Client", "Error", "Stream", "parse_resume_token", "staging_path",
           "tune_allocator"]


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
