"""The image example end to end (client/examples/imagenet_style.py) in its small
mode, against the session's stratad: it generates JPEG files, ingests them,
and trains the same CNN through strata (per-sample, stratified, DataLoader
workers from the fork server) and through torchvision's ImageFolder. Checks
what it prints: each pipeline trained, every image exactly once per epoch, and
strata's batches hold each class's share (the rare class in every batch).
Skipped when torchvision or PIL is not installed."""

import json
import os
import re
import subprocess
import sys

import pytest

from conftest import ROOT

pytest.importorskip("torchvision")
pytest.importorskip("PIL")

IMAGES = 160
BATCH = 32  # class09 is 5 of the 160 images: exactly one in every batch


def test_the_image_example_trains_both_pipelines_on_every_image_once(server, tmp_path):
    results = tmp_path / "results.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    run = subprocess.run(
        [sys.executable, str(ROOT / "client/examples/imagenet_style.py"), "--server", server.address,
         "--dataset", "imgexample", "--dir", str(tmp_path / "images"), "--images", str(IMAGES),
         "--batch-size", str(BATCH), "--workers", "0,2", "--json", str(results)],
        env=env, capture_output=True, text=True, timeout=500)
    out = run.stdout
    assert run.returncode == 0, out + run.stderr
    assert f"{IMAGES} JPEG files in 10 classes" in out
    assert re.search(r"ingested as imgexample@\d+", out)
    assert "strata's worker fork server started in" in out
    steps = -(-IMAGES // BATCH)
    for pipeline in ("strata", "imagefolder"):
        for workers in (0, 2):
            line = re.search(rf"^{pipeline} +workers={workers}: (\d+) images in .* (\d+) steps, .*exactly once: (\w+)$",
                             out, re.MULTILINE)
            assert line, out
            assert line.groups() == (str(IMAGES), str(steps), "yes"), line.group(0)
    assert "every run saw every image exactly once: yes" in out
    # the table: best and median images/s of each pipeline, and their ratios
    assert re.search(r"^ +2 +\d+, +\d+ +\d+, +\d+ +\d+\.\d\dx, \d+\.\d\dx$", out, re.MULTILINE), out

    rows = json.loads(results.read_text())
    assert {(r["pipeline"], r["workers"]) for r in rows} == {(p, w) for p in ("strata", "imagefolder") for w in (0, 2)}
    for r in rows:
        assert r["exactly_once"] and r["steps"] == steps and r["images_per_s"] > 0
        if r["pipeline"] == "strata":
            # stratified: every full batch holds floor or ceil of each class's share
            assert r["max_deviation"] < 1.0, r
            assert r["batches_without_rare"] == 0, r
