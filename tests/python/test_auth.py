"""strata.Client(token=...) against a stratad with TLS and a token file (made
with openssl here): a reader token streams an epoch exactly once, a writer
token ingests, and a call without a token, or with one the file does not
hold, is refused with strata.Error whose code is Unauthenticated; a reader
that ingests gets PermissionDenied."""

import subprocess

import pytest

import strata
from conftest import Stratad, synthetic_payload

WRITER = "pytest-writer-token-0123456789"
READER = "pytest-reader-token-9876543210"
SAMPLES = 300


def openssl(*args):
    subprocess.run(["openssl", *args], check=True, capture_output=True)


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    d = tmp_path_factory.mktemp("auth")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    openssl("req", "-x509", *ec, "-keyout", str(d / "ca.key"), "-out", str(d / "ca.pem"), "-days", "2",
            "-subj", "/CN=pytest-ca")
    (d / "node.ext").write_text("subjectAltName=DNS:node-1,IP:127.0.0.1\n")
    openssl("req", *ec, "-keyout", str(d / "node.key"), "-out", str(d / "node.csr"), "-subj", "/CN=node-1")
    openssl("x509", "-req", "-in", str(d / "node.csr"), "-CA", str(d / "ca.pem"), "-CAkey", str(d / "ca.key"),
            "-CAcreateserial", "-out", str(d / "node.pem"), "-days", "2", "-extfile", str(d / "node.ext"))
    (d / "tokens").write_text(f"writer {WRITER} ci\nreader {READER} trainers\n")
    server = Stratad(d, ["--tls-cert", str(d / "node.pem"), "--tls-key", str(d / "node.key"),
                         "--auth-tokens", str(d / "tokens")])
    yield server.address, str(d / "ca.pem")
    assert server.stop() == 0
    log = server.log_path.read_text(errors="replace")
    assert WRITER not in log and READER not in log  # tokens never reach the log


def refused(address, ca, token, call):
    with pytest.raises(strata.Error) as caught:
        call(strata.Client(address, token=token, tls_ca=ca))
    return caught.value


def test_writer_ingests_and_reader_streams_exactly_once(secured):
    address, ca = secured
    writer = strata.Client(address, token=WRITER, tls_ca=ca)
    summary = writer.ingest("authed", ({"key": f"k{i}", "label": "l", "fields": {"bin": synthetic_payload(i)}}
                                       for i in range(SAMPLES)))
    assert summary["dataset"]["samples"] == SAMPLES
    reader = strata.Client(address, token=READER, tls_ca=ca)
    seen = []
    for batch in reader.stream("authed", batch_size=32):
        for i, sample_id in enumerate(batch.ids.tolist()):
            assert bytes(batch.sample(i)) == synthetic_payload(sample_id)
        seen.extend(batch.ids.tolist())
    assert sorted(seen) == list(range(SAMPLES))


@pytest.mark.parametrize("token", ["", "not-a-token-the-file-holds"])
def test_missing_or_unknown_token_is_unauthenticated(secured, token):
    address, ca = secured
    error = refused(address, ca, token, lambda c: c.list())
    assert error.code == "Unauthenticated", str(error)
    error = refused(address, ca, token, lambda c: next(iter(c.stream("authed", batch_size=8))))
    assert error.code == "Unauthenticated", str(error)


def test_reader_that_ingests_is_permission_denied(secured):
    address, ca = secured
    error = refused(address, ca, READER, lambda c: c.ingest("nope", iter([{"key": "a", "fields": {"b": b"x"}}])))
    assert error.code == "PermissionDenied", str(error)
