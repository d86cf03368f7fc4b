"""strata.Client and strata.Stream against a live stratad: iteration, payload
equality, zero-copy hand-off to numpy and torch, resumption, errors."""

import collections
import gc
import os
import subprocess
import time

import numpy as np
import pytest
import torch

import strata
from conftest import STRATAD, SYNTHETIC_SAMPLES, synthetic_label, synthetic_payload


def all_batches(stream):
    return list(stream)


def test_the_package_has_the_version_of_stratad():
    # stratad and the module both take the project's version from the build.
    out = subprocess.run([STRATAD(), "--version"], capture_output=True, text=True, check=True).stdout
    assert out == f"stratad {strata.__version__}\n"
    assert all(part.isdigit() for part in strata.__version__.split(".")), strata.__version__


def test_one_epoch_delivers_every_sample_once_with_its_payload(client, synthetic):
    stream = client.stream(synthetic, batch_size=64, seed=3, epoch=0)
    seen = []
    steps = 0
    for batch in stream:
        assert batch.step == steps
        assert batch.epoch == 0 and batch.rank == 0
        assert len(batch) == len(batch.ids) == len(batch.labels) == len(batch.offsets) == len(batch.sizes)
        assert batch.ids.dtype == np.uint64 and batch.offsets.dtype == np.uint64 and batch.sizes.dtype == np.uint64
        assert int(batch.sizes.sum()) == batch.nbytes == len(batch.payload)
        for i, sample_id in enumerate(batch.ids.tolist()):
            assert batch.labels[i] == synthetic_label(sample_id)
            assert bytes(batch.sample(i)) == synthetic_payload(sample_id)
            start, size = int(batch.offsets[i]), int(batch.sizes[i])
            assert batch.payload[start:start + size].tobytes() == synthetic_payload(sample_id)
        seen.extend(batch.ids.tolist())
        steps += 1
    assert steps == stream.steps_in_epoch == (SYNTHETIC_SAMPLES + 63) // 64
    assert sorted(seen) == list(range(SYNTHETIC_SAMPLES))
    assert stream.device == "cpu"


def test_a_client_in_a_zone_streams_from_a_node_that_names_none(server, synthetic):
    # zone= only says which holders to prefer: with no node in that zone the
    # stream is the same as without it.
    zoned = strata.Client(server.address, zone="zone-a")
    seen = [i for batch in zoned.stream(synthetic, batch_size=64, seed=3, epoch=0) for i in batch.ids.tolist()]
    assert sorted(seen) == list(range(SYNTHETIC_SAMPLES))
    plain = [i for batch in strata.Client(server.address).stream(synthetic, batch_size=64, seed=3, epoch=0)
             for i in batch.ids.tolist()]
    assert seen == plain


def test_receive_window_is_the_one_asked_for_a_near_node_and_streams_the_same(server, synthetic):
    # 64 MiB would move 1 GB/s up to a 67 ms round trip, which loopback never
    # takes: it is kept. 0 is gRPC's own window. A negative size is refused.
    wide = strata.Client(server.address, receive_window=64 << 20)
    assert wide.receive_window == 64 << 20
    own = strata.Client(server.address, receive_window=0)
    assert own.receive_window == 0
    seen = [i for batch in own.stream(synthetic, batch_size=64, seed=3, epoch=0) for i in batch.ids.tolist()]
    assert seen == [i for batch in wide.stream(synthetic, batch_size=64, seed=3, epoch=0) for i in batch.ids.tolist()]
    assert sorted(seen) == list(range(SYNTHETIC_SAMPLES))
    with pytest.raises(ValueError, match="receive_window"):
        strata.Client(server.address, receive_window=-1)


def test_fields_and_sample_views(client, synthetic):
    batch = next(iter(client.stream(synthetic, batch_size=16, seed=1)))
    for i, sample_id in enumerate(batch.ids.tolist()):
        assert batch.field_names(i) == ["bin"]
        assert bytes(batch.field(i, "bin")) == synthetic_payload(sample_id)
        assert batch.field(i, "jpg") is None
    assert bytes(batch.sample(-1)) == synthetic_payload(int(batch.ids[-1]))
    with pytest.raises(IndexError):
        batch.sample(16)
    view = batch.sample(0)
    assert isinstance(view, memoryview) and view.readonly


def test_numpy_views_share_the_batch_memory_and_keep_it_alive(client, synthetic):
    stream = client.stream(synthetic, batch_size=32, seed=2)
    batch = next(stream)
    payload = batch.payload
    assert payload.dtype == np.uint8 and not payload.flags.writeable
    assert payload.ctypes.data == batch.host_data_ptr == batch.data_ptr
    via_buffer = np.frombuffer(batch, dtype=np.uint8)
    assert np.shares_memory(payload, via_buffer)
    assert memoryview(batch).readonly and memoryview(batch).nbytes == batch.nbytes
    assert not batch.ids.flags.writeable
    expected = [synthetic_payload(i) for i in batch.ids.tolist()]
    ids, offsets, sizes = batch.ids, batch.offsets, batch.sizes
    del batch
    stream.close()
    del stream
    gc.collect()
    for k, sample in enumerate(expected):  # the views outlived the batch and its stream
        assert payload[int(offsets[k]):int(offsets[k]) + int(sizes[k])].tobytes() == sample
    assert len(ids) == len(expected)


def test_torch_tensors_share_the_batch_memory(client, synthetic):
    batch = next(iter(client.stream(synthetic, batch_size=32, seed=2)))
    tensor = batch.torch()
    assert tensor.dtype == torch.uint8 and tensor.device.type == "cpu" and tensor.dim() == 1
    assert tensor.data_ptr() == batch.data_ptr
    assert torch.utils.dlpack.from_dlpack(batch).data_ptr() == batch.data_ptr
    as_numpy = tensor.numpy()
    assert np.shares_memory(as_numpy, batch.payload)
    expected = b"".join(synthetic_payload(i) for i in batch.ids.tolist())
    del batch
    gc.collect()
    assert tensor.numpy().tobytes() == expected


def test_resume_token_continues_where_the_stream_stopped(client, synthetic):
    full = [(b.ids.tolist(), b.payload.tobytes()) for b in client.stream(synthetic, batch_size=50, seed=9, epoch=1)]
    stream = client.stream(synthetic, batch_size=50, seed=9, epoch=1)
    first = [(b.ids.tolist(), b.payload.tobytes()) for _, b in zip(range(7), stream)]
    token = stream.resume_token()
    stream.close()
    parts = strata.parse_resume_token(token)
    assert parts["step"] == 7 and parts["epoch"] == 1 and parts["seed"] == 9
    assert parts["dataset"] == synthetic.split("@")[0]
    resumed = client.resume(token, batch_size=50)
    rest = [(b.ids.tolist(), b.payload.tobytes()) for b in resumed]
    assert first + rest == full
    assert resumed.next_step == len(full)


def test_prefetched_stream_reports_the_position_of_what_it_returned(client, synthetic):
    # device=None pulls prefetch_depth batches ahead on a thread; the stream's
    # position (resume token, next_step) is that of the batches returned.
    plain = [b.ids.tolist() for b in client.stream(synthetic, batch_size=64, seed=2, prefetch_depth=0)]
    stream = client.stream(synthetic, batch_size=64, seed=2, prefetch_depth=4)
    assert stream.next_step == 0 and stream.steps_in_epoch == 0
    got = []
    for k, batch in enumerate(stream):
        got.append(batch.ids.tolist())
        time.sleep(0.01)  # the thread runs ahead meanwhile
        assert stream.next_step == k + 1
        assert strata.parse_resume_token(stream.resume_token())["step"] == k + 1
        assert stream.steps_in_epoch == len(plain)
    assert got == plain
    # Closed with batches pulled ahead and a pull in flight: returns, and the rest resumes.
    stream = client.stream(synthetic, batch_size=64, seed=2, prefetch_depth=2)
    first = [next(stream).ids.tolist() for _ in range(3)]
    token = stream.resume_token()
    stream.close()
    assert first + [b.ids.tolist() for b in client.resume(token)] == plain


def test_resume_on_another_world_size_splits_the_same_global_batches(client, synthetic):
    full = [b.ids.tolist() for b in client.stream(synthetic, batch_size=40, seed=5)]
    stream = client.stream(synthetic, batch_size=40, seed=5)
    for _ in range(3):
        next(stream)
    token = stream.resume_token()
    ranks = [[b.ids.tolist() for b in client.resume(token, batch_size=20, rank=r, world=2)] for r in range(2)]
    for step, ids in enumerate(full[3:]):
        joined = ranks[0][step] + (ranks[1][step] if step < len(ranks[1]) else [])
        assert sorted(joined) == sorted(ids)


def test_staged_host_stream_prefetches_into_reused_buffers(client, synthetic):
    stream = client.stream(synthetic, batch_size=100, seed=4, device="cpu", prefetch_depth=3)
    assert stream.device == "cpu"
    assert stream.staging == "host memory (prefer_device is off)"
    held = []
    for batch in stream:
        assert batch.device == "cpu"
        assert batch.payload.ctypes.data == batch.data_ptr
        assert batch.torch().data_ptr() == batch.data_ptr
        held.append(batch)
    assert sorted(i for b in held for i in b.ids.tolist()) == list(range(SYNTHETIC_SAMPLES))
    for batch in held:  # every held batch kept its own slot
        for i, sample_id in enumerate(batch.ids.tolist()):
            assert bytes(batch.sample(i)) == synthetic_payload(sample_id)
    assert len({b.data_ptr for b in held}) == len(held)
    # Dropped batches give their slots back: a second pass reuses a handful of buffers.
    del held, batch
    addresses = {b.data_ptr for b in client.stream(synthetic, batch_size=100, seed=4, device="cpu")}
    assert len(addresses) <= 5


def test_staged_stream_on_a_gpu(client, synthetic):
    where, why = strata.staging_path("cuda")
    if where == "cpu":
        pytest.skip(f"no GPU: staging would use {why}")
    if not torch.cuda.is_available():
        pytest.skip("this torch has no CUDA support")
    stream = client.stream(synthetic, batch_size=64, seed=1, device="cuda")
    assert stream.device == "cuda:0"
    for batch in stream:
        tensor = batch.torch()
        assert tensor.is_cuda and tensor.data_ptr() == batch.data_ptr
        assert tensor.cpu().numpy().tobytes() == batch.payload.tobytes()


def test_large_batches_split_over_copy_threads_arrive_intact(client):
    # 48 samples of 300,001 bytes, 20 a batch: 6 MB batches, copied by 3 threads.
    def big(i):
        return bytes([i & 0xFF]) * 300_000 + i.to_bytes(1, "little")
    name = client.ingest("pybig", ({"key": f"b{i}", "label": "x", "fields": {"bin": big(i)}} for i in range(48)))
    dataset = "pybig@%d" % name["dataset"]["version"]
    seen = []
    for batch in client.stream(dataset, batch_size=20, seed=3, device="cpu", copy_threads=3):
        for i, sample_id in enumerate(batch.ids.tolist()):
            assert bytes(batch.sample(i)) == big(sample_id)
        seen += batch.ids.tolist()
    assert sorted(seen) == list(range(48))
    with pytest.raises(ValueError, match="copy_threads needs a staging ring"):
        client.stream(dataset, batch_size=20, copy_threads=2)
    with pytest.raises(strata.Error) as e:
        client.stream(dataset, batch_size=20, device="cpu", copy_threads=65)
    assert e.value.code == "InvalidArgument" and "copy threads" in str(e.value)


def test_staging_falls_back_to_host_without_a_gpu():
    where, why = strata.staging_path("cuda:0")
    assert where in ("cpu", "cuda:0")
    if where == "cpu":
        assert why.startswith("host memory (")
    assert strata.staging_path("cpu") == ("cpu", "host memory (prefer_device is off)")
    with pytest.raises(ValueError):
        strata.staging_path("tpu")


def test_drop_last_drops_the_short_batch(client, synthetic):
    sizes = [len(b) for b in client.stream(synthetic, batch_size=300, drop_last=True)]
    assert sizes == [300, 300, 300]
    sizes = [len(b) for b in client.stream(synthetic, batch_size=300)]
    assert sizes == [300, 300, 300, 100]


def test_errors_carry_their_code(client, server, synthetic):
    with pytest.raises(strata.Error) as e:
        next(client.stream("no-such-dataset", batch_size=8))
    assert e.value.code == "NotFound"
    with pytest.raises(strata.Error) as e:
        client.stream(synthetic, batch_size=0)
    assert e.value.code == "InvalidArgument"
    with pytest.raises(strata.Error) as e:
        client.stream(synthetic, batch_size=8, rank=2, world=2)
    assert e.value.code == "InvalidArgument"
    with pytest.raises(strata.Error) as e:
        client.resume("not a token", batch_size=8)
    assert e.value.code == "InvalidArgument"
    with pytest.raises(strata.Error) as e:
        strata.Client("127.0.0.1:1", connect_timeout_ms=500)
    assert e.value.code == "Unavailable"
    assert isinstance(e.value, RuntimeError)


def test_admin_calls_return_dicts(client, synthetic):
    name, version = synthetic.split("@")
    listed = [d for d in client.list() if d["name"] == name]
    assert listed and listed[0]["samples"] == SYNTHETIC_SAMPLES
    described = client.describe(synthetic)
    assert described["dataset"]["version"] == int(version)
    assert described["dataset"]["state"] == "VERSION_SEALED"
    assert {c["key"]: c["count"] for c in described["dataset"]["label_counts"]} == {
        f"label{k}": SYNTHETIC_SAMPLES // 5 for k in range(5)}
    status = client.status()
    assert status["datasets"] >= 1 and isinstance(status["node_id"], str)


def test_delete_removes_a_version_and_keep_versions_keeps_the_newest(client):
    rows = lambda n: ({"key": f"k{i}", "label": "l", "fields": {"bin": b"x" * i}} for i in range(n))  # noqa: E731
    first = client.ingest("pydel", rows(20))["dataset"]["version"]
    second = client.ingest("pydel", rows(30))["dataset"]["version"]
    deleted = client.delete("pydel@%d" % first)
    assert deleted["dataset"]["state"] == "VERSION_DELETED" and deleted["dataset"]["samples"] == 20
    assert deleted["nodes_told"] == [] and deleted["nodes_pending"] == []  # one node: nobody else
    assert [d["version"] for d in client.list() if d["name"] == "pydel"] == [second]
    # abort_ingest (strata rm --abort) on a version no ingest writes: a plain delete, again OK.
    assert client.delete("pydel@%d" % first, abort_ingest=True)["dataset"]["state"] == "VERSION_DELETED"
    with pytest.raises(strata.Error) as e:
        client.delete("pydel@%d" % (second + 5))
    assert e.value.code == "NotFound" and "'pydel' has no version" in str(e.value)
    with pytest.raises(strata.Error) as e:
        client.delete("pydel")
    assert e.value.code == "InvalidArgument"
    third = client.ingest("pydel", rows(10), options={"keep_versions": 1})["dataset"]
    assert third["keep_versions"] == 1
    assert [d["version"] for d in client.list() if d["name"] == "pydel"] == [third["version"]]


def test_a_token_before_the_first_batch_is_one_that_resumes_or_none(client, synthetic):
    name = synthetic.split("@")[0]
    unpinned = client.stream(name, 10, seed=3, start_step=5)
    with pytest.raises(strata.Error) as e:
        unpinned.resume_token()  # it named version 0, which resume refused as malformed
    assert e.value.code == "FailedPrecondition" and "NAME@N" in str(e.value)
    first = next(unpinned)
    token = unpinned.resume_token()
    unpinned.close()
    assert [b.step for b in client.resume(token, max_steps=2)] == [first.step + 1, first.step + 2]


def test_resume_arguments_of_the_wrong_type_name_the_parameter(client, synthetic):
    stream = client.stream(synthetic, 10, seed=2)
    next(stream)
    token = stream.resume_token()
    stream.close()
    for kwargs in ({"step": -1}, {"step": "3"}, {"step": 10**30}, {"batch_size": -1}, {"drop_last": "yes"}):
        name = next(iter(kwargs))
        with pytest.raises(TypeError, match=name):  # was RuntimeError: "Unable to cast Python instance..."
            client.resume(token, **kwargs)
    with pytest.raises(ValueError, match="batch_size must be at least 1, or None"):  # was taken as "not given"
        client.resume(token, batch_size=0)


def test_prefetch_depth_out_of_range_is_refused(client, synthetic):
    for depth in (-5, 65, 10**6):  # -5 was taken as 0, 10**6 read the whole epoch ahead
        with pytest.raises(ValueError, match="prefetch_depth"):
            client.stream(synthetic, 10, prefetch_depth=depth)


def test_devices_and_indexes_out_of_range_are_refused_naming_them(client, synthetic):
    for device in (-1, "cuda:-1"):
        with pytest.raises(ValueError, match="GPU ordinal"):
            client.stream(synthetic, 10, device=device)
    with pytest.raises(TypeError, match="device must be an int"):
        client.stream(synthetic, 10, device=2**40)
    batch = next(iter(client.stream(synthetic, 4)))
    assert bytes(batch.sample(-4)) == bytes(batch.sample(0))
    with pytest.raises(IndexError, match="sample index -5 out of range for a batch of 4"):
        batch.sample(-5)


def test_a_client_takes_several_addresses_and_connects_to_one_that_answers(server, synthetic):
    client = strata.Client("127.0.0.1:1," + server.address, connect_timeout_ms=2000)
    assert client.address == server.address
    assert len(next(iter(client.stream(synthetic, 4)))) == 4
    with pytest.raises(ValueError, match="host:port"):
        strata.Client(",")


def test_a_second_thread_in_next_is_refused(client, synthetic):
    # Two threads iterating one stream without prefetch assembled into one
    # batch at once (a crash or heap corruption); the second now raises.
    import threading
    refused = []
    for trial in range(40):
        stream = client.stream(synthetic, 5, seed=trial, prefetch_depth=0)

        def drain():
            try:
                for _ in stream:
                    pass
            except strata.Error as e:
                refused.append(e)

        threads = [threading.Thread(target=drain) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        stream.close()
    assert all(e.code == "FailedPrecondition" and "another thread" in str(e) for e in refused)


def test_close_and_context_manager(client, synthetic):
    with client.stream(synthetic, batch_size=10) as stream:
        batch = next(stream)
    assert list(stream) == []  # closed: iteration ends
    assert len(batch) == 10    # batches outlive the stream
    with pytest.raises(ValueError):
        stream.resume_token()


def test_batches_kept_by_the_caller_stay_intact_with_the_tuned_allocator(client, synthetic):
    # The client recycles part buffers and the caller's previous batch; batches the
    # caller still holds must never be among them.
    if "asan" in os.environ.get("LD_PRELOAD", ""):
        pytest.skip("malloc is the ASan runtime's here: nothing to tune (CI's sanitizer step)")
    assert strata.tune_allocator() is True
    kept = list(client.stream(synthetic, batch_size=16, seed=5, epoch=1))
    seen = []
    for batch in kept:
        for i, sample_id in enumerate(batch.ids.tolist()):
            assert bytes(batch.sample(i)) == synthetic_payload(sample_id)
        seen.extend(batch.ids.tolist())
    assert sorted(seen) == list(range(SYNTHETIC_SAMPLES))


def test_dropped_batches_are_reused_but_never_while_a_view_holds_one(client, synthetic):
    # A plain stream assembles new batches into the buffers of batches Python
    # has dropped. Only the views are kept here, of every other batch: each must
    # still hold its own samples at the end, however many batches were reused.
    for depth in (0, 2):
        views, seen = [], []
        for n, batch in enumerate(client.stream(synthetic, batch_size=8, seed=9, prefetch_depth=depth)):
            ids = batch.ids.tolist()
            seen.extend(ids)
            if n % 2 == 0:
                views.append((ids, batch.offsets.copy(), batch.sizes.copy(), batch.payload))
            del batch
        assert sorted(seen) == list(range(SYNTHETIC_SAMPLES))
        for ids, offsets, sizes, payload in views:
            for k, sample_id in enumerate(ids):
                assert payload[int(offsets[k]):int(offsets[k] + sizes[k])].tobytes() == synthetic_payload(sample_id)


def test_label_and_stratum_counts_are_the_batch_composition(client, synthetic):
    for sampler in ("shuffle", "stratified"):
        total = collections.Counter()
        for batch in client.stream(synthetic, batch_size=50, seed=4, sampler=sampler):
            counts = batch.label_counts()
            assert counts == dict(collections.Counter(batch.labels))
            assert list(counts) == list(dict.fromkeys(batch.labels))  # first occurrence first
            assert batch.stratum_counts() == dict(collections.Counter(batch.strata))
            total.update(counts)
        assert total == collections.Counter(synthetic_label(i) for i in range(SYNTHETIC_SAMPLES))


def test_a_sampler_named_wrong_is_a_value_error_naming_the_choices(client, synthetic):
    with pytest.raises(ValueError, match="sampler must be 'shuffle', 'stratified', 'weighted' or a dict, not 'nope'"):
        client.stream(synthetic, batch_size=8, sampler="nope")
    first = next(iter(client.stream(synthetic, batch_size=8, seed=2, sampler="Stratified")))  # any case
    assert first.ids.tolist() == next(iter(client.stream(synthetic, batch_size=8, seed=2,
                                                         sampler={"kind": "STRATIFIED"}))).ids.tolist()
    with pytest.raises(TypeError, match="sampler must be None, 'shuffle', 'stratified', 'weighted' or a dict"):
        client.stream(synthetic, batch_size=8, sampler=5)  # was "'int' object is not iterable"
    with pytest.raises(TypeError, match="a sample is a dict .* not 5"):
        client.ingest("never", [5])


def test_labels_and_attributes_must_be_text(client):
    sample = lambda **kw: dict({"key": "a", "label": "x", "fields": {"bin": b"1"}}, **kw)  # noqa: E731
    for bad, why in [(sample(label=None), "None"), (sample(label=3), "must be str"),
                     (sample(attributes={"source": None}), "None"), (sample(attributes={"source": 1.5}), "not float"),
                     (sample(label=b"\xff"), "not UTF-8"), (sample(key=None), "None"),
                     (("a", None, {"bin": b"1"}), "None")]:
        with pytest.raises(strata.Error) as e:
            client.ingest("pybad", [bad])
        assert e.value.code == "InvalidArgument" and why in str(e.value), (bad, str(e.value))
    # bytes that are UTF-8 are text: never the repr "b'cat'".
    summary = client.ingest("pybytes", [
        {"key": b"k0", "label": b"cat", "attributes": {b"source": b"cam"}, "fields": {b"bin": b"1"}},
        ("k1", "dog", {"bin": b"2"}),
        {"key": "k2", "fields": {"bin": b"3"}},  # no label, no attributes
    ], options={"stratify_by": ["source"]})
    dataset = "pybytes@%d" % summary["dataset"]["version"]
    batch = next(client.stream(dataset, batch_size=3, sampler="stratified"))
    by_id = {int(i): (label, stratum) for i, label, stratum in zip(batch.ids, batch.labels, batch.strata)}
    assert sorted(label for label, _ in by_id.values()) == ["", "cat", "dog"]
    assert [s for label, s in by_id.values() if label == "cat"][0].endswith("cam")
    assert not any("b'" in label or "b'" in s for label, s in by_id.values())


def test_a_complete_token_alone_resumes_a_stratified_stream(client, synthetic):
    plan = dict(batch_size=48, seed=6, sampler="stratified", drop_last=True)
    full = [b.ids.tolist() for b in client.stream(synthetic, **plan)]
    assert len(full) == SYNTHETIC_SAMPLES // 48
    stream = client.stream(synthetic, **plan)
    head = [next(stream).ids.tolist() for _ in range(4)]
    token = stream.resume_token()
    assert token.startswith("strata2:")
    parts = strata.parse_resume_token(token)
    assert parts["complete"] and parts["global_batch"] == 48 and parts["drop_last"] is True
    assert parts["sampler"]["kind"] == "STRATIFIED" and parts["step"] == 4
    assert head + [b.ids.tolist() for b in client.resume(token)] == full
    halves = [[b.ids.tolist() for b in client.resume(token, rank=r, world=2)] for r in range(2)]
    assert [sorted(a + b) for a, b in zip(*halves)] == [sorted(ids) for ids in full[4:]]
    # What disagrees with the token is refused, saying why.
    for bad, why in [(dict(batch_size=50), "global batch is 48"), (dict(sampler="weighted"), "uses sampler STRATIFIED"),
                     (dict(drop_last=False), "drops the short last batch"), (dict(world=5), "does not divide")]:
        with pytest.raises(strata.Error) as e:
            client.resume(token, **bad)
        assert e.value.code == "InvalidArgument" and why in str(e.value), (bad, str(e.value))
    assert [b.ids.tolist() for b in client.resume(token, batch_size=48, sampler="stratified", drop_last=True)] == \
        full[4:]
    # The older format carries no plan: the caller gives it, as before.
    old = "strata1:%s:%016x:6:0:4" % (synthetic, parts["plan_hash"])
    assert strata.parse_resume_token(old)["complete"] is False
    with pytest.raises(strata.Error, match="pass batch_size"):
        client.resume(old)
    resumed = client.resume(old, batch_size=48, sampler="stratified", drop_last=True)
    assert [b.ids.tolist() for b in resumed] == full[4:]
    assert strata.parse_resume_token(resumed.resume_token())["complete"]  # continues as a complete token
    with pytest.raises(strata.Error) as e:
        next(client.resume(old, batch_size=48))  # not the token's plan: the server refuses it
    assert e.value.code == "FailedPrecondition"
