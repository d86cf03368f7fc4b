"""Ingest options for redundancy from Python, on a real 3-node cluster:
erasure coding through options={"ec_data", "ec_parity"} and through
redundancy="ec:K+M", copies through replication=, and a malformed redundancy
refused before anything is sent."""

import socket
import time

import pytest

import strata
from conftest import Stratad, synthetic_label, synthetic_payload

SAMPLES = 600


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def cluster(work_dir):
    ports = [free_port() for _ in range(3)]
    peers = ",".join(f"node-{i + 1}=127.0.0.1:{p}" for i, p in enumerate(ports))
    config = work_dir / "redundancy.yaml"
    config.write_text("cluster:\n  heartbeat_interval_ms: 200\n  failure_timeout_ms: 800\n"
                      "disk_low_watermark: 1MiB\ndisk_high_watermark: 2MiB\n")
    nodes = []
    try:
        for i, port in enumerate(ports):
            data = work_dir / f"redundancy-node-{i + 1}"
            data.mkdir()
            nodes.append(Stratad(data, ["--node-id", f"node-{i + 1}", "--peers", peers, "--config", str(config)],
                                 listen=f"127.0.0.1:{port}"))
        yield nodes
    finally:
        for n in nodes:
            n.stop()


def samples():
    return ({"key": f"k{i}", "label": synthetic_label(i), "fields": {"bin": synthetic_payload(i)}}
            for i in range(SAMPLES))


def ingest_when_all_up(client, *args, **kwargs):
    """Ingests once every node is in the map and up (a cluster just started may not be)."""
    deadline = time.monotonic() + 30
    while True:
        try:
            return client.ingest(*args, **kwargs)
        except strata.Error as e:
            if time.monotonic() > deadline or "nodes" not in str(e):
                raise
            time.sleep(0.2)


def streamed(client, dataset):
    got = {}
    for batch in client.stream(dataset, batch_size=50, seed=4):
        for i, sample_id in enumerate(batch.ids.tolist()):
            assert sample_id not in got
            got[sample_id] = bytes(batch.sample(i))
    return got


@pytest.mark.parametrize("how", [{"options": {"ec_data": 2, "ec_parity": 1}}, {"redundancy": "ec:2+1"}])
def test_erasure_coded_ingest(cluster, how):
    client = strata.Client(cluster[0].address)
    name = "pyec_opts" if "options" in how else "pyec_text"
    summary = ingest_when_all_up(client, name, samples(), shard_size=16 << 10, **how)
    info = summary["dataset"]
    assert info["ec_data"] == 2 and info["ec_parity"] == 1 and info.get("replication", 0) == 0
    version = f"{name}@{info['version']}"
    described = client.describe(version)["dataset"]
    assert (described["ec_data"], described["ec_parity"]) == (2, 1)
    got = streamed(client, version)
    assert got == {i: synthetic_payload(i) for i in range(SAMPLES)}


def test_replication_keyword(cluster):
    client = strata.Client(cluster[0].address)
    summary = ingest_when_all_up(client, "pyrep", samples(), replication=2)
    assert summary["dataset"]["replication"] == 2 and summary["dataset"].get("ec_data", 0) == 0


@pytest.mark.parametrize("text", ["ec:2", "ec:0+1", "rs:2+1", "ec:30+3", ""])
def test_malformed_redundancy_is_refused(cluster, text):
    client = strata.Client(cluster[0].address)
    with pytest.raises(strata.Error, match="invalid redundancy"):
        client.ingest("pybad", samples(), redundancy=text)
    with pytest.raises(strata.Error, match="not found|NotFound|no such|unknown"):
        client.describe("pybad")


def test_two_writers_from_python_seal_one_version(cluster):
    # Several writers, one version (docs/design.md, "Ingest with several
    # writers"): each its own thread and node; the second commit seals it,
    # writer 1's samples taking the ids after writer 0's.
    import threading
    client = strata.Client(cluster[0].address)
    half = SAMPLES // 2
    results = [None, None]

    def write(w):
        part = ({"key": f"k{i}", "label": synthetic_label(i), "fields": {"bin": synthetic_payload(i)}}
                for i in range(w * half, (w + 1) * half))
        results[w] = ingest_when_all_up(client, "pyparts", part,
                                        options={"ingest_id": "py-two", "writers": 2, "writer": w})

    threads = [threading.Thread(target=write, args=(w,)) for w in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    states = sorted(r["dataset"]["state"] for r in results)
    assert states == ["VERSION_INGESTING", "VERSION_SEALED"], results
    assert sorted(r["writers_committed"] for r in results) == [1, 2]
    sealed = next(r for r in results if r["dataset"]["state"] == "VERSION_SEALED")
    assert sealed["dataset"]["samples"] == SAMPLES
    assert streamed(client, f"pyparts@{sealed['dataset']['version']}") == {
        i: synthetic_payload(i) for i in range(SAMPLES)}
