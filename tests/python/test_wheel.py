"""The wheel (client/python/make_wheel.py), installed as a user would: a fresh
venv of another CPython (the pyenv python3, without numpy or torch) installs
it with no network and streams an epoch exactly once. The build puts the wheel
in $STRATA_WHEEL_DIR for the interpreter $STRATA_WHEEL_PYTHON."""

import glob
import os
import subprocess
import textwrap

import pytest

from conftest import SYNTHETIC_SAMPLES, synthetic_payload

WHEEL_DIR = os.environ.get("STRATA_WHEEL_DIR", "")
WHEEL_PYTHON = os.environ.get("STRATA_WHEEL_PYTHON", "")


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    if not WHEEL_DIR or not WHEEL_PYTHON:
        pytest.fail("STRATA_WHEEL_DIR and STRATA_WHEEL_PYTHON are not set: run through ctest")
    version = subprocess.check_output([WHEEL_PYTHON, "-c", "import sys; print('%d%d' % sys.version_info[:2])"],
                                      text=True).strip()
    wheels = glob.glob(os.path.join(WHEEL_DIR, f"strata-*-cp{version}-*.whl"))
    assert len(wheels) == 1, wheels
    root = tmp_path_factory.mktemp("venv") / "env"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PIP_", "VIRTUAL_ENV"))}
    env.update(PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")  # no network, and none tried
    subprocess.run([WHEEL_PYTHON, "-m", "venv", str(root)], check=True, env=env)
    python = str(root / "bin" / "python")
    done = subprocess.run([python, "-m", "pip", "install", "--no-index", "--no-deps", wheels[0]], env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return python, env


def test_the_wheel_in_a_fresh_venv_streams_an_epoch_exactly_once(venv, server, synthetic):
    python, env = venv
    script = textwrap.dedent("""
        import sys, strata
        assert not strata.HAVE_NUMPY, "this interpreter has numpy: the test means to run without it"
        assert strata.__version__ == sys.argv[3], (strata.__version__, sys.argv[3])
        assert "site-packages" in strata.__file__, strata.__file__
        seen = {}
        for batch in strata.Client(sys.argv[1]).stream(sys.argv[2], batch_size=64, seed=5):
            ids = batch.ids
            assert isinstance(ids, memoryview) and ids.format in ("Q", "L") and ids.readonly
            for i, sample_id in enumerate(ids.tolist()):
                assert sample_id not in seen
                seen[sample_id] = bytes(batch.sample(i))
            assert bytes(memoryview(batch)) == b"".join(seen[i] for i in ids.tolist())
        for sample_id in sorted(seen):
            print(sample_id, seen[sample_id].hex())
    """)
    # The wheel's file name carries the version (strata-VERSION-TAGS.whl).
    version = os.path.basename(glob.glob(os.path.join(WHEEL_DIR, "strata-*.whl"))[0]).split("-")[1]
    done = subprocess.run([python, "-c", script, server.address, synthetic, version], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.split("\n")[:-1]
    assert len(lines) == SYNTHETIC_SAMPLES
    for sample_id, line in enumerate(lines):
        assert line == f"{sample_id} {synthetic_payload(sample_id).hex()}"
