#!/usr/bin/env python3
"""A real Prometheus scraping a real 3-node strata cluster under load.

Starts the cluster with deploy/local/cluster.sh on free ports, ingests a small
dataset and streams it in a loop, and starts Prometheus (1 s scrapes) with
deploy/prometheus/prometheus.yml and alerts.yml. Then, through Prometheus's
HTTP API:
  * every query of deploy/grafana/strata.json (and its node variable) must
    parse and return at least one series;
  * every alert expression must parse, its signal (the expression without
    its final comparison) must return data, and the rule engine must report
    every rule healthy;
  * after node-3 is killed with kill -9, StrataNodeDown's and StrataPeerDown's
    expressions must return node-3, and the others must count shards
    under-replicated.
Everything it started is stopped on the way out. Exits 77 (skipped) only if
prometheus is not installed.

Usage: prometheus_cluster_test.py SOURCE_DIR BUILD_DIR
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

from free_ports import free_port_run
from host_disk import HOST_DISK_NOT_FULL

DEADLINE = time.monotonic() + 240  # the whole test; ctest's TIMEOUT is above it
RATE_WINDOW = "30s"  # what the dashboard's $__rate_interval becomes (30 scrapes)


def log(msg):
    print(msg, flush=True)


class Prom:
    def __init__(self, port):
        self.base = "http://127.0.0.1:%d" % port

    def get(self, path, **params):
        url = self.base + path + ("?" + urllib.parse.urlencode(params) if params else "")
        try:
            with urllib.request.urlopen(url, timeout=10) as r:
                return json.load(r)
        except urllib.error.HTTPError as e:  # 400 for a query that does not parse
            return json.load(e)

    def query(self, expr):
        return self.get("/api/v1/query", query=expr)


def signal_of(expr):
    """SIGNAL of 'SIGNAL OP NUMBER' (alerts.yml keeps every rule in that form)."""
    m = re.match(r"^(.*\S)\s*(==|!=|>=|<=|>|<)\s*[0-9.e+-]+\s*$", expr, re.S)
    if not m:
        raise AssertionError("alert expression not of the form SIGNAL OP NUMBER: " + expr)
    return m.group(1)


def dashboard_queries(path):
    dash = json.load(open(path))
    out = []
    for panel in dash["panels"]:
        for t in panel.get("targets", []):
            expr = t["expr"].replace("$__rate_interval", RATE_WINDOW).replace("$node", ".*")
            out.append((panel["title"], expr))
    return dash, out


def main():
    src, build = sys.argv[1], sys.argv[2]
    prometheus = shutil.which("prometheus")
    if prometheus is None:
        log("SKIP: prometheus is not installed (deploy/setup-debian.sh installs it)")
        return 77
    version = subprocess.run([prometheus, "--version"], capture_output=True, text=True)
    log((version.stdout or version.stderr).splitlines()[0])

    work = tempfile.mkdtemp(prefix="strata-prom-test-")
    cluster_dir = os.path.join(work, "cluster")
    cluster = os.path.join(src, "deploy/local/cluster.sh")
    procs = []
    passed = False
    try:
        grpc_base = free_port_run(3)
        metrics_base = free_port_run(3)
        prom_port = free_port_run(1)
        log("cluster: gRPC %d-%d, metrics %d-%d; prometheus %d" %
            (grpc_base, grpc_base + 2, metrics_base, metrics_base + 2, prom_port))
        env = dict(os.environ, STRATAD=os.path.join(build, "server/stratad"))
        subprocess.run([cluster, "start", "--nodes", "3", "--base-port", str(grpc_base),
                        "--metrics-base-port", str(metrics_base), "--dir", cluster_dir] + HOST_DISK_NOT_FULL,
                       env=env, check=True, timeout=60)
        servers = ",".join("127.0.0.1:%d" % (grpc_base + i) for i in range(3))

        # Prometheus: the shipped config, scraping every second.
        prom_dir = os.path.join(work, "prometheus")
        os.makedirs(os.path.join(prom_dir, "targets"))
        config = open(os.path.join(src, "deploy/prometheus/prometheus.yml")).read()
        config = config.replace("scrape_interval: 15s", "scrape_interval: 1s")
        config = config.replace("evaluation_interval: 15s", "evaluation_interval: 1s")
        config = config.replace("/etc/prometheus/strata-targets/*.json", os.path.join(prom_dir, "targets/*.json"))
        config = config.replace("refresh_interval: 30s", "refresh_interval: 1s")
        open(os.path.join(prom_dir, "prometheus.yml"), "w").write(config)
        shutil.copy(os.path.join(src, "deploy/prometheus/alerts.yml"), os.path.join(prom_dir, "strata-alerts.yml"))
        json.dump([{"targets": ["127.0.0.1:%d" % (metrics_base + i) for i in range(3)]}],
                  open(os.path.join(prom_dir, "targets/strata.json"), "w"))
        prom_log = open(os.path.join(work, "prometheus.log"), "w")
        procs.append(subprocess.Popen(
            [prometheus, "--config.file", os.path.join(prom_dir, "prometheus.yml"),
             "--storage.tsdb.path", os.path.join(prom_dir, "data"),
             "--web.listen-address", "127.0.0.1:%d" % prom_port],
            stdout=prom_log, stderr=subprocess.STDOUT))

        # Load: a dataset with two copies of every shard, streamed by two ranks in a loop.
        data = os.path.join(work, "dataset")
        subprocess.run([os.path.join(build, "bench/strata-make-dataset"), "--out", data, "--samples", "4000",
                        "--classes", "4", "--size", "1KiB"], check=True, timeout=60, stdout=subprocess.DEVNULL)
        strata = os.path.join(build, "client/strata")
        subprocess.run([strata, "ingest", "--server", servers, "--dataset", "promtest", "--replication", "2",
                        "--shard-size", "256KiB", data], check=True, timeout=60, stdout=subprocess.DEVNULL)
        loop = ("while :; do for r in 0 1; do %s stream --server %s --dataset promtest --batch-size 32 --world 2 "
                "--rank $r --quiet >/dev/null 2>&1; done; done") % (strata, servers)
        procs.append(subprocess.Popen(["bash", "-c", loop], start_new_session=True))

        prom = Prom(prom_port)
        # Every target up, and enough scrapes for a rate over RATE_WINDOW.
        started = None
        while time.monotonic() < DEADLINE:
            try:
                r = prom.query('count(up{job="strata"} == 1)')
                if r["status"] == "success" and r["data"]["result"] and r["data"]["result"][0]["value"][1] == "3":
                    started = started or time.monotonic()
                    if time.monotonic() - started > 5:
                        break
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            time.sleep(0.5)
        else:
            raise AssertionError("Prometheus never saw the 3 nodes up")

        failures = []

        def must_return_data(what, expr, wait_s=20):
            # Data comes within a few 1 s scrapes; a query that has none by
            # then has none to find (this bounds a failing run, not a pass).
            until = min(DEADLINE, time.monotonic() + wait_s)
            last = None
            while time.monotonic() < until:
                last = prom.query(expr)
                if last.get("status") != "success":
                    failures.append("%s: does not parse: %s" % (what, last.get("error")))
                    return
                if last["data"]["result"]:
                    return
                time.sleep(0.5)
            failures.append("%s: no data for %s" % (what, expr))

        # The load reaches the servers: samples served and local reads timed.
        must_return_data("load", "sum(increase(strata_served_samples_total[%s])) > 0" % RATE_WINDOW)
        must_return_data("load", 'sum(increase(strata_read_seconds_count{source="local"}[%s])) > 0' % RATE_WINDOW)

        dash, queries = dashboard_queries(os.path.join(src, "deploy/grafana/strata.json"))
        for title, expr in queries:
            must_return_data("dashboard panel '%s'" % title, expr)
        for var in dash["templating"]["list"]:
            if var["type"] == "query":
                m = re.match(r"label_values\((.*), (\w+)\)$", var["query"]["query"])
                values = prom.get("/api/v1/label/%s/values" % m.group(2), **{"match[]": m.group(1)})
                if values.get("status") != "success" or len(values["data"]) != 3:
                    failures.append("dashboard variable %s: %s" % (var["name"], values))
        log("dashboard: %d queries run" % len(queries))

        # Alert rules, as Prometheus loaded them from alerts.yml.
        rules = []
        rules_until = min(DEADLINE, time.monotonic() + 30)
        while time.monotonic() < rules_until:
            groups = prom.get("/api/v1/rules")["data"]["groups"]
            rules = [r for g in groups for r in g["rules"]]
            if rules and all(r.get("lastEvaluation", "").startswith("2") and r["health"] != "unknown" for r in rules):
                break
            time.sleep(0.5)
        if len(rules) < 9:
            failures.append("only %d alert rules loaded" % len(rules))
        for r in rules:
            if r["health"] != "ok":
                failures.append("alert %s: rule health %s: %s" % (r["name"], r["health"], r.get("lastError")))
            parsed = prom.query(r["query"])
            if parsed.get("status") != "success":
                failures.append("alert %s: does not parse: %s" % (r["name"], parsed.get("error")))
            must_return_data("alert %s (signal)" % r["name"], signal_of(r["query"]))
        log("alerts: %d rules run" % len(rules))

        # A node killed: the node-down alerts' expressions return it.
        pid = int(open(os.path.join(cluster_dir, "node-3.pid")).read())
        os.kill(pid, signal.SIGKILL)
        for name in ("StrataNodeDown", "StrataPeerDown"):
            expr = next((r["query"] for r in rules if r["name"] == name), None)
            if expr is None:
                failures.append("alert %s: not loaded" % name)
                continue
            must_return_data("alert %s after kill -9 of node-3" % name, expr, wait_s=40)
        # node-3 holds copies of the ingested shards: the others count them under-replicated.
        must_return_data("under-replicated shards after kill -9 of node-3", "max(strata_shards_under_replicated) > 0")
        log("kill -9 node-3: StrataNodeDown and StrataPeerDown expressions return it; shards under-replicated")

        for f in failures:
            log("FAIL " + f)
        if failures:
            log("prometheus log: " + os.path.join(work, "prometheus.log"))
            return 1
        passed = True
        return 0
    finally:
        for p in reversed(procs):
            try:
                os.killpg(p.pid, signal.SIGTERM) if p.args[0] == "bash" else p.terminate()
                p.wait(timeout=20)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                p.kill()
        subprocess.run([cluster, "stop", "--dir", cluster_dir], timeout=60, stdout=subprocess.DEVNULL)
        if passed:
            shutil.rmtree(work, ignore_errors=True)
        else:
            log("kept for inspection: " + work)


if __name__ == "__main__":
    sys.exit(main())
