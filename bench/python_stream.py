#!/usr/bin/python3
"""Streams one epoch through the Python client and prints its rate in the
form `strata stream` prints it, for bench/python_client.sh.

For parity with `strata stream` each batch's labels are counted (in C++, with
Batch.label_counts(), as `strata stream` counts them); the payload is taken as
a numpy view (zero-copy) and its length added up."""

import argparse
import collections
import time

import strata

p = argparse.ArgumentParser()
p.add_argument("--server", required=True)
p.add_argument("--dataset", required=True)
p.add_argument("--batch-size", type=int, required=True)
p.add_argument("--device", default=None, help="None: batches from the network; cpu: a host staging ring")
args = p.parse_args()

client = strata.Client(args.server)
samples = payload = batches = 0
labels = collections.Counter()
stream = client.stream(args.dataset, batch_size=args.batch_size, device=args.device)
start = time.perf_counter()  # after the stream is open, as `strata stream` starts its clock
for batch in stream:
    view = batch.payload
    payload += len(view)
    samples += len(batch)
    labels.update(batch.label_counts())
    batches += 1
seconds = time.perf_counter() - start
print(f"python ({'no staging' if args.device is None else 'staging ' + args.device}): {samples} samples, "
      f"{batches} batches in {seconds:.3f}s: {samples / seconds:,.0f} samples/s, {payload / seconds / 1e6:,.1f} MB/s")
