#!/usr/bin/env python3
"""deploy/local/cluster.sh as a user runs it, with zones.

  * `cluster.sh --help` explains (exit 0, and names --zones); a zone that is
    not a plain name is refused (exit 2) before anything starts;
  * `start --nodes 4 --zones east,west` puts node-1 and node-3 in east and
    node-2 and node-4 in west: `strata describe NAME --shards --json` lists
    each shard's two copies (R=2) on nodes of both zones, with those zones;
  * `strata stream --zone west` delivers the whole set; `--zone wset` too,
    warning that no node is in that zone;
  * a node killed with SIGKILL shows in `status` as ended "killed by
    SIGKILL" (its watcher recorded it), and `restart --node 2` brings it
    back; `stop` stops four.

Usage: local_cluster_test.py SOURCE_DIR BUILD_DIR
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from free_ports import free_port_run
from host_disk import HOST_DISK_NOT_FULL

SAMPLES = 6000


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, **kw)


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def main():
    src, build = sys.argv[1], sys.argv[2]
    cluster = os.path.join(src, "deploy/local/cluster.sh")
    strata = os.path.join(build, "client/strata")
    env = dict(os.environ, STRATAD=os.path.join(build, "server/stratad"))
    work = tempfile.mkdtemp(prefix="strata-local-cluster-test-")
    cluster_dir = os.path.join(work, "cluster")
    try:
        helped = run([cluster, "--help"])
        check(helped.returncode == 0 and "--zones" in helped.stdout, "--help: %r" % (helped,))

        bad = run([cluster, "start", "--nodes", "2", "--dir", cluster_dir, "--zones", "east,we st"], env=env)
        check(bad.returncode == 2 and "--zones" in bad.stderr, "a zone with a space: %r" % (bad,))
        check(not os.path.exists(os.path.join(cluster_dir, "node-1.pid")), "a refused start started a node")

        base = free_port_run(4)
        metrics = free_port_run(4)
        started = run([cluster, "start", "--nodes", "4", "--base-port", str(base), "--metrics-base-port",
                       str(metrics), "--dir", cluster_dir, "--zones", "east,west"] + HOST_DISK_NOT_FULL, env=env)
        check(started.returncode == 0, "start: %r" % (started,))
        servers = ",".join("127.0.0.1:%d" % (base + i) for i in range(4))

        data = os.path.join(work, "data")
        made = run([os.path.join(build, "bench/strata-make-dataset"), "--out", data, "--format", "tar", "--samples",
                    str(SAMPLES), "--size", "4KiB", "--samples-per-tar", "1000"])
        check(made.returncode == 0, "make dataset: %r" % (made,))
        tars = sorted(os.path.join(data, f) for f in os.listdir(data) if f.endswith(".tar"))
        ingested = run([strata, "ingest", "-q", "--server", servers, "--dataset", "zoned", "--replication", "2",
                        "--shard-size", "4MiB"] + tars)
        check(ingested.returncode == 0, "ingest: %r" % (ingested,))

        described = run([strata, "describe", "zoned", "--shards", "--json", "--server", servers])
        check(described.returncode == 0, "describe: %r" % (described,))
        shards = json.loads(described.stdout)["shards"]
        check(len(shards) >= 4, "expected several shards, got %d" % len(shards))
        want = {"node-1": "east", "node-2": "west", "node-3": "east", "node-4": "west"}
        for shard in shards:
            holders = shard["holders"]
            check(len(holders) == 2, "shard %s: %r" % (shard["seq"], holders))
            for h in holders:
                check(want.get(h["node"]) == h["zone"], "shard %s: %r in the wrong zone" % (shard["seq"], h))
            check({h["zone"] for h in holders} == {"east", "west"}, "shard %s: %r" % (shard["seq"], holders))

        streamed = run([strata, "stream", "--server", servers, "--dataset", "zoned", "--batch-size", "100",
                        "--zone", "west", "--output", os.path.join(work, "batches.jsonl")])
        check(streamed.returncode == 0, "stream: %r" % (streamed,))
        ids = [i for line in open(os.path.join(work, "batches.jsonl")) for i in json.loads(line)["ids"]]
        check(sorted(int(i) for i in ids) == list(range(SAMPLES)), "stream --zone west: %d ids" % len(ids))

        # A zone no node is in: the stream still delivers, and says so.
        typo = run([strata, "stream", "--server", servers, "--dataset", "zoned", "--batch-size", "100", "-q",
                    "--zone", "wset"])
        check(typo.returncode == 0, "stream --zone wset: %r" % (typo,))
        check("no node of the cluster is in zone 'wset'" in typo.stderr, "no warning: %r" % (typo.stderr,))
        check("%d samples" % SAMPLES in typo.stdout.replace(",", ""), "stream --zone wset: %r" % (typo.stdout,))
        check("no node of the cluster is in zone" not in streamed.stderr, "warned for west: %r" % (streamed.stderr,))

        # A node that dies leaves how it ended, which `status` shows.
        pid = int(open(os.path.join(cluster_dir, "node-2.pid")).read())
        os.kill(pid, signal.SIGKILL)
        status = None
        # The pid goes first, then the watcher writes how the node ended: wait for both.
        for _ in range(200):
            status = run([cluster, "status", "--dir", cluster_dir])
            if "node-2 not running (ended " in status.stdout:
                break
            time.sleep(0.05)
        check(("node-2 not running (ended " in status.stdout and "pid %d killed by SIGKILL)" % pid in status.stdout
               and "node-1 running" in status.stdout), "status after kill -9 of node-2: %r" % (status,))
        restarted = run([cluster, "restart", "--node", "2", "--dir", cluster_dir])
        check(restarted.returncode == 0 and "node-2  ready:" in restarted.stdout, "restart: %r" % (restarted,))
        status = run([cluster, "status", "--dir", cluster_dir])
        check("node-2 running" in status.stdout, "status after the restart: %r" % (status,))

        stopped = run([cluster, "stop", "--dir", cluster_dir])
        check(stopped.returncode == 0 and "stopped 4 node(s)" in stopped.stdout, "stop: %r" % (stopped,))
        # After stop, status still says how each node ended (SIGTERM: exit status 0).
        for _ in range(50):
            status = run([cluster, "status", "--dir", cluster_dir])
            if status.stdout.count("exit status 0") == 4:
                break
            time.sleep(0.1)
        check(status.stdout.count("not running (ended ") == 4 and status.stdout.count("exit status 0") == 4,
              "status after stop: %r" % (status,))
        print("local cluster with zones: ok (%d shards, each in east and west)" % len(shards))
        return 0
    finally:
        run([cluster, "stop", "--dir", cluster_dir])
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
