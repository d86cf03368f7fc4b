"""The DDP example end to end (client/examples/run_ddp_example.sh): two gloo
processes train on a generated dataset, are stopped mid-epoch after a
checkpoint, and resume in new processes. Across ranks and the interruption,
each epoch's samples are disjoint between ranks and each arrives exactly once."""

import json
import os
import subprocess
import sys

from conftest import MAKE_DATASET, ROOT, STRATA_CLI, STRATAD, SYNTHETIC_SAMPLES

SAMPLES = 3000


def test_two_rank_ddp_run_with_resume_gets_every_sample_exactly_once(tmp_path):
    report = tmp_path / "report.json"
    env = dict(os.environ, STRATA_STRATAD=str(STRATAD()), STRATA_CLI=str(STRATA_CLI()),
               STRATA_MAKE_DATASET=str(MAKE_DATASET()),
               PYTHONPATH=os.pathsep.join(p for p in sys.path if p), TMPDIR=str(tmp_path))
    run = subprocess.run(
        ["bash", str(ROOT / "client/examples/run_ddp_example.sh"), "--samples", str(SAMPLES), "--",
         "--report", str(report)],
        env=env, capture_output=True, text=True, timeout=540)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "checkpointed after epoch 0 step 20" in run.stdout
    assert "resumed at epoch 0 after step 20" in run.stdout

    epochs = json.loads(report.read_text())["epochs"]
    assert [e["epoch"] for e in epochs] == [0, 1]
    for e in epochs:
        rank0, rank1 = (set(ids) for ids in e["ids"])
        assert len(rank0) == len(e["ids"][0]) and len(rank1) == len(e["ids"][1])  # no repeats within a rank
        assert not rank0 & rank1                                                   # disjoint ranks
        assert rank0 | rank1 == set(range(SAMPLES))                                # every sample
        assert abs(len(rank0) - len(rank1)) <= 32                                  # balanced shares
    assert epochs[1]["accuracy"] > 0.5, epochs  # the model learns from the streamed payloads


def test_per_sample_mode_under_ddp_is_exactly_once_and_stratified(server, synthetic, tmp_path):
    import socket
    from collections import Counter

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    outs = [tmp_path / f"rank{r}.json" for r in range(2)]
    procs = [subprocess.Popen([sys.executable, str(ROOT / "tests/python/ddp_per_sample.py"), server.address,
                               synthetic, str(r), "2", str(port), str(outs[r])], env=env) for r in range(2)]
    assert [p.wait(timeout=300) for p in procs] == [0, 0]
    ranks = [json.loads(o.read_text()) for o in outs]
    ids = [i for batches in ranks for b in batches for i in b["ids"]]
    assert sorted(ids) == list(range(SYNTHETIC_SAMPLES))  # exactly once across ranks
    # Each stratum (label0..label4) is a fifth of the data: 5 of every collated batch of 25, within one.
    strata_seen = set()
    for batches in ranks:
        for b in batches:
            counts = Counter(b["strata"])
            strata_seen |= set(counts)
            share = len(b["ids"]) / 5
            for key in {f"label{k}" for k in range(5)} | set(counts):
                assert abs(counts.get(key, 0) - share) <= 1, (b, counts)
    assert len(strata_seen) == 5, strata_seen
