"""Fixtures for the Python client's tests: a real stratad on a loopback port it
picks itself, a connected strata.Client, and datasets with known payloads.

Binaries come from STRATA_STRATAD, STRATA_CLI and STRATA_MAKE_DATASET (ctest
sets them), else from $STRATA_BUILD_DIR (default ./build). The strata package
comes from PYTHONPATH, else from $STRATA_BUILD_DIR/client/python.
Run by hand:  PYTHONPATH=build/client/python /usr/bin/python3 -m pytest tests/python -q
"""

import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("STRATA_BUILD_DIR", ROOT / "build"))

try:
    import strata  # noqa: F401
except ImportError:
    sys.path.insert(0, str(BUILD / "client" / "python"))
    import strata  # noqa: F401


def binary(env, relative):
    path = Path(os.environ.get(env, BUILD / relative))
    if not path.exists():
        pytest.fail(f"{path} not found: build strata first, or set {env}")
    return path


STRATAD = lambda: binary("STRATA_STRATAD", "server/stratad")  # noqa: E731
STRATA_CLI = lambda: binary("STRATA_CLI", "client/strata")  # noqa: E731
MAKE_DATASET = lambda: binary("STRATA_MAKE_DATASET", "bench/strata-make-dataset")  # noqa: E731


class Stratad:
    """A stratad child process; `address` is where it listens."""

    READY = re.compile(r"ready: grpc=(\S+)")

    def __init__(self, data_dir, extra_args=(), listen="127.0.0.1:0"):
        self.log_path = Path(data_dir) / "stratad.log"
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [str(STRATAD()), "--data-dir", str(Path(data_dir) / "data"), "--listen", listen,
             "--metrics-listen", "", "--log-level", "info",
             # The default watermarks (5% and 10% free) are about the host's
             # disk: a nearly full CI disk would refuse ingests. As the C++
             # tests' nodes (tests/support/process.cc).
             "--disk-low-watermark", "1MiB", "--disk-high-watermark", "2MiB", *extra_args],
            stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            match = self.READY.search(self.log_path.read_text(errors="replace"))
            if match:
                self.address = match.group(1)
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.02)
        self.proc.kill()
        raise RuntimeError("stratad did not become ready:\n" + self.log_path.read_text(errors="replace"))

    def stop(self):
        """SIGTERM and wait; returns the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        return self.proc.returncode


@pytest.fixture(scope="session")
def work_dir():
    with tempfile.TemporaryDirectory(prefix="strata-pytest-") as d:
        yield Path(d)


@pytest.fixture(scope="session")
def server(work_dir):
    s = Stratad(work_dir)
    yield s
    assert s.stop() == 0, s.log_path.read_text(errors="replace")


@pytest.fixture(scope="session")
def client(server):
    return strata.Client(server.address)


def synthetic_payload(i):
    """Sample i's bytes: their length and content vary with i."""
    return (f"sample-{i}-".encode() + bytes((i * 7 + k) & 0xFF for k in range(i % 113)))


def synthetic_label(i):
    return f"label{i % 5}"


SYNTHETIC_SAMPLES = 1000


@pytest.fixture(scope="session")
def synthetic(client):
    """A dataset of SYNTHETIC_SAMPLES samples; sample id i has synthetic_payload(i)."""
    summary = client.ingest("pysynth", ({"key": f"k{i}", "label": synthetic_label(i),
                                         "fields": {"bin": synthetic_payload(i)}}
                                        for i in range(SYNTHETIC_SAMPLES)))
    assert summary["dataset"]["samples"] == SYNTHETIC_SAMPLES
    return "pysynth@%d" % summary["dataset"]["version"]
