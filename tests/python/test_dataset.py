"""strata.torch.StrataDataset: iteration through a DataLoader, the decode
hook, rank and world from torch.distributed, and mid-epoch resumption with
state_dict() / load_state_dict()."""

import socket

import pytest
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader

import strata
from conftest import SYNTHETIC_SAMPLES, synthetic_label, synthetic_payload
from strata.torch import StrataDataset


def ids_of(items):
    return [item["ids"].tolist() for item in items]


def test_default_decode_yields_tensors_over_the_payload(server, synthetic):
    ds = StrataDataset(server.address, synthetic, batch_size=64, seed=1)
    items = list(DataLoader(ds, batch_size=None, num_workers=0))
    assert len(items) == len(ds) == (SYNTHETIC_SAMPLES + 63) // 64
    assert sorted(i for item in items for i in item["ids"].tolist()) == list(range(SYNTHETIC_SAMPLES))
    item = items[0]
    assert item["payload"].dtype == torch.uint8 and item["ids"].dtype == torch.int64
    assert item["step"] == 0 and item["epoch"] == 0
    for k, sample_id in enumerate(item["ids"].tolist()):
        start, size = int(item["offsets"][k]), int(item["sizes"][k])
        assert bytes(item["payload"][start:start + size].tolist()) == synthetic_payload(sample_id)


def test_staged_dataset_passes_copy_threads_to_its_ring(server, synthetic):
    ds = StrataDataset(server.address, synthetic, batch_size=100, seed=2, device="cpu", copy_threads=2)
    assert sorted(i for item in ds for i in item["ids"].tolist()) == list(range(SYNTHETIC_SAMPLES))
    bad = StrataDataset(server.address, synthetic, batch_size=100, device="cpu", copy_threads=65)
    with pytest.raises(strata.Error, match="copy threads"):
        next(iter(bad))


def test_decode_hook_turns_payloads_into_tensors(server, synthetic):
    def lengths(batch):
        return torch.from_numpy(batch.sizes.astype("int64")), torch.from_numpy(batch.ids.astype("int64"))

    ds = StrataDataset(server.address, synthetic, batch_size=100, decode=lengths)
    for sizes, ids in ds:
        assert sizes.tolist() == [len(synthetic_payload(i)) for i in ids.tolist()]


def test_state_dict_resumes_mid_epoch(server, synthetic):
    full = ids_of(StrataDataset(server.address, synthetic, batch_size=48, seed=7, epoch=2))
    ds = StrataDataset(server.address, synthetic, batch_size=48, seed=7, epoch=2)
    assert ds.state_dict()["resume_token"] is None
    first = []
    for item in DataLoader(ds, batch_size=None):
        first.append(item["ids"].tolist())
        if len(first) == 6:
            state = ds.state_dict()  # as a checkpoint after step 5
            break
    assert state["epoch"] == 2 and state["resume_token"].endswith(":6")

    restored = StrataDataset(server.address, synthetic, batch_size=48)  # a fresh process's dataset
    restored.load_state_dict(state)
    assert restored.epoch == 2 and restored.seed == 7
    rest = ids_of(DataLoader(restored, batch_size=None))
    assert first + rest == full
    # The epoch is complete: its state resumes to nothing; the next epoch starts afresh.
    done = restored.state_dict()
    again = StrataDataset(server.address, synthetic, batch_size=48)
    again.load_state_dict(done)
    assert list(again) == []
    again.set_epoch(3)
    assert sorted(i for b in ids_of(again) for i in b) == list(range(SYNTHETIC_SAMPLES))


def test_set_epoch_after_load_state_dict_resumes_that_epoch(server, synthetic):
    """The README's loop: load_state_dict(ckpt), then set_epoch(e) for e from
    ckpt's epoch on. The interrupted epoch continues (each sample once); a
    set_epoch to another epoch, or once iterated, starts from the start."""
    full = ids_of(StrataDataset(server.address, synthetic, batch_size=50, seed=3, epoch=1))
    ds = StrataDataset(server.address, synthetic, batch_size=50, seed=3, epoch=1)
    first = []
    for item in ds.loader():
        first.append(item["ids"].tolist())
        if len(first) == 7:
            state = ds.state_dict()
            break
    restored = StrataDataset(server.address, synthetic, batch_size=50, seed=3)
    restored.load_state_dict(state)
    restored.set_epoch(1)
    rest = ids_of(restored.loader())
    assert first + rest == full
    restored.set_epoch(1)  # iterated since the load: the epoch again, whole
    assert ids_of(restored.loader()) == full
    other = StrataDataset(server.address, synthetic, batch_size=50, seed=3)
    other.load_state_dict(state)
    other.set_epoch(2)  # another epoch: the loaded position does not carry over
    assert sorted(i for b in ids_of(other.loader()) for i in b) == list(range(SYNTHETIC_SAMPLES))


@pytest.mark.parametrize("epoch_samples", [333, 5000])
def test_len_counts_the_plans_steps(server, synthetic, epoch_samples):
    """len() is the number of steps the epoch has, also where the sampler's
    epoch_samples (fewer or more than the dataset holds) sets it."""
    sampler = {"kind": "WEIGHTED", "epoch_samples": epoch_samples}
    ds = StrataDataset(server.address, synthetic, batch_size=10, seed=4, sampler=sampler)
    assert len(ds) == (epoch_samples + 9) // 10
    assert len(list(ds)) == len(ds)
    assert len(StrataDataset(server.address, synthetic, batch_size=10, sampler="stratified")) == SYNTHETIC_SAMPLES // 10
    empty = {"kind": "WEIGHTED", "epoch_samples": 5}
    assert len(StrataDataset(server.address, synthetic, batch_size=10, sampler=empty, drop_last=True)) == 0


def test_iterating_again_replays_the_epoch(server, synthetic):
    ds = StrataDataset(server.address, synthetic, batch_size=128, seed=1)
    assert ids_of(ds) == ids_of(ds)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_rank_and_world_come_from_torch_distributed(server, synthetic):
    ds = StrataDataset(server.address, synthetic, batch_size=10)
    assert (ds.rank, ds.world) == (0, 1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0, world_size=1)
    try:
        assert (ds.rank, ds.world) == (0, 1)
        explicit = StrataDataset(server.address, synthetic, batch_size=10, rank=1, world=4)
        assert (explicit.rank, explicit.world) == (1, 4)
        assert len(explicit) == SYNTHETIC_SAMPLES // 40
    finally:
        dist.destroy_process_group()


def test_workers_yield_the_zero_worker_sequence(server, synthetic):
    ds = StrataDataset(server.address, synthetic, batch_size=30, seed=2, epoch=1)
    expected = ids_of(ds.loader(num_workers=0))
    assert sorted(i for b in expected for i in b) == list(range(SYNTHETIC_SAMPLES))
    for workers in (2, 3):
        assert ids_of(ds.loader(num_workers=workers)) == expected, workers
    # A plain DataLoader keeps the order too (spawned: gRPC does not survive fork).
    assert ids_of(DataLoader(ds, batch_size=None, num_workers=2, multiprocessing_context="spawn")) == expected


def test_state_dict_with_workers_resumes_mid_epoch(server, synthetic):
    full = ids_of(StrataDataset(server.address, synthetic, batch_size=30, seed=2).loader())
    ds = StrataDataset(server.address, synthetic, batch_size=30, seed=2)
    first = []
    for item in ds.loader(num_workers=3):
        first.append(item["ids"].tolist())
        if len(first) == 7:
            state = ds.state_dict()  # a checkpoint after step 6, taken while workers run ahead
            break
    assert strata.parse_resume_token(state["resume_token"])["step"] == 7
    restored = StrataDataset(server.address, synthetic, batch_size=30)
    restored.load_state_dict(state)
    rest = ids_of(restored.loader(num_workers=2))
    assert first + rest == full
    assert strata.parse_resume_token(restored.state_dict()["resume_token"])["step"] == len(full)
    # The next iteration starts the epoch afresh (the resume position was used).
    assert ids_of(restored.loader(num_workers=2)) == full


def test_workers_resume_at_and_near_the_end_of_an_epoch(server, synthetic):
    # A worker whose first step is past the epoch's end has nothing to yield:
    # it used to fail the loader ("start step 11 is past the end of the epoch").
    full = ids_of(StrataDataset(server.address, synthetic, batch_size=30, seed=4).loader())
    ds = StrataDataset(server.address, synthetic, batch_size=30, seed=4)
    assert ids_of(ds.loader(num_workers=3)) == full
    done = ds.state_dict()  # the epoch complete: the most common checkpoint
    for workers in (2, 3):
        restored = StrataDataset(server.address, synthetic, batch_size=30, seed=4)
        restored.load_state_dict(done)
        assert ids_of(restored.loader(num_workers=workers)) == []
    near = StrataDataset(server.address, synthetic, batch_size=30, seed=4)
    for k, _ in enumerate(near.loader(num_workers=0)):
        if k == len(full) - 2:
            state = near.state_dict()  # one step left
            break
    restored = StrataDataset(server.address, synthetic, batch_size=30, seed=4)
    restored.load_state_dict(state)
    assert ids_of(restored.loader(num_workers=3)) == full[-1:]


def test_a_state_of_another_dataset_or_plan_is_refused(server, client, synthetic):
    ds = StrataDataset(server.address, synthetic, batch_size=10, seed=1)
    for k, _ in enumerate(ds):
        if k == 3:
            state = ds.state_dict()
            break
    other = StrataDataset(server.address, "some-other-dataset", batch_size=10, seed=1)
    with pytest.raises(ValueError, match="some-other-dataset"):
        other.load_state_dict(state)
    for kwargs in ({"sampler": "stratified"}, {"drop_last": True}):
        changed = StrataDataset(server.address, synthetic, batch_size=10, seed=1, **kwargs)
        changed.load_state_dict(state)
        for workers in (0, 2):
            with pytest.raises(strata.Error) as e:
                list(changed.loader(num_workers=workers))
            # With workers, torch raises the error again from its text: .code survives.
            assert e.value.code == "InvalidArgument", (kwargs, workers, str(e.value))
            changed.load_state_dict(state)
    # "shuffle" named against a stratified token: refused too (the default
    # sampler used to count as "not given").
    stratified = client.stream(synthetic, 10, seed=1, sampler="stratified")
    next(stratified)
    token = stratified.resume_token()
    stratified.close()
    with pytest.raises(strata.Error) as e:
        client.resume(token, sampler="shuffle")
    assert e.value.code == "InvalidArgument" and "STRATIFIED" in str(e.value)
    client.resume(token, sampler="stratified").close()


def test_a_state_is_of_the_dataset_its_token_names(server, synthetic):
    name = synthetic.partition("@")[0]
    ds = StrataDataset(server.address, name, batch_size=10, seed=1)  # the newest version: the synthetic one
    for k, _ in enumerate(ds):
        if k == 2:
            state = ds.state_dict()
            break
    assert state["dataset"] == name
    pinned = StrataDataset(server.address, synthetic, batch_size=10, seed=1)
    pinned.load_state_dict(state)  # "name" and "name@N" of the token's version: the same data
    assert strata.parse_resume_token(pinned.state_dict()["resume_token"])["step"] == 3
    wrong_version = StrataDataset(server.address, name + "@999", batch_size=10, seed=1)
    with pytest.raises(ValueError, match="@999"):
        wrong_version.load_state_dict(state)
    # A state without "dataset" (saved by hand) is still checked, by its token.
    other = StrataDataset(server.address, "some-other-dataset", batch_size=10, seed=1)
    with pytest.raises(ValueError, match="some-other-dataset"):
        other.load_state_dict({"resume_token": state["resume_token"], "epoch": state["epoch"]})


def test_per_sample_ranks_without_samples_in_the_last_step_still_yield_it(server, synthetic):
    # 1000 samples, global batch 333 x 3: two steps, the last holding one sample, rank
    # 0's. Ranks 1 and 2 still yield a (empty) collated batch for it, so that
    # every rank runs the same steps (DDP ranks that disagree hang).
    seen = []
    for rank in range(3):
        ds = StrataDataset(server.address, synthetic, batch_size=333, seed=5, rank=rank, world=3, per_sample=True)
        for workers in (0, 2):
            batches = list(ds.loader(num_workers=workers))
            assert len(batches) == len(ds) // 333 == 2, (rank, workers)
            token = strata.parse_resume_token(ds.state_dict()["resume_token"])
            assert token["complete"] and token["step"] == 2, (rank, workers, token)
            last = batches[-1]
            if rank == 0:
                assert len(last["id"]) == 1
            else:
                assert last == [], (rank, workers)
        seen += [i for b in batches for i in (b["id"].tolist() if b != [] else [])]
    assert sorted(seen) == list(range(SYNTHETIC_SAMPLES))


def test_bad_sizes_and_ranks_are_refused_when_the_dataset_is_made(server, synthetic):
    for kwargs, word in (({"batch_size": 0}, "batch_size"), ({"batch_size": -1}, "batch_size"),
                         ({"batch_size": 8, "world": 0}, "world"), ({"batch_size": 8, "rank": 2, "world": 2}, "rank"),
                         ({"batch_size": 8, "rank": -1}, "rank")):
        with pytest.raises(ValueError, match=word):
            StrataDataset(server.address, synthetic, **kwargs)


def size_and_id(sample):
    return torch.tensor([len(sample["data"]), sample["id"]])


def test_per_sample_mode_collates_each_step_in_plan_order(server, client, synthetic):
    expected = [b.ids.tolist() for b in client.stream(synthetic, batch_size=32, seed=3, sampler="stratified")]
    ds = StrataDataset(server.address, synthetic, batch_size=32, seed=3, sampler="stratified", per_sample=True)
    for workers in (0, 2, 3):
        got = list(ds.loader(num_workers=workers))
        assert [b["id"].tolist() for b in got] == expected, workers
    first = got[0]
    for k, sample_id in enumerate(first["id"].tolist()):
        assert first["data"][k] == synthetic_payload(sample_id) == first["fields"]["bin"][k]
        assert first["label"][k] == synthetic_label(sample_id)

    ds = StrataDataset(server.address, synthetic, batch_size=32, seed=3, sampler="stratified", per_sample=True,
                       transform=size_and_id)
    for batch in ds.loader(num_workers=2):
        assert batch.shape[1] == 2
        assert batch[:, 0].tolist() == [len(synthetic_payload(i)) for i in batch[:, 1].tolist()]
    with pytest.raises(ValueError, match="batch_size"):
        ds.loader(batch_size=8)


def test_per_sample_state_dict_resumes_at_a_step(server, synthetic):
    ds = StrataDataset(server.address, synthetic, batch_size=40, seed=4, per_sample=True)
    full = [b["id"].tolist() for b in ds.loader()]
    ds = StrataDataset(server.address, synthetic, batch_size=40, seed=4, per_sample=True)
    first = []
    for batch in ds.loader(num_workers=2):
        first.append(batch["id"].tolist())
        if len(first) == 3:
            state = ds.state_dict()
            break
    restored = StrataDataset(server.address, synthetic, batch_size=40, per_sample=True)
    restored.load_state_dict(state)
    assert first + [b["id"].tolist() for b in restored.loader(num_workers=3)] == full
