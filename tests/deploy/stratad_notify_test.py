#!/usr/bin/env python3
"""stratad under a service manager: the sd_notify protocol and the health endpoints.

Plays systemd's side of Type=notify: binds a datagram socket, starts stratad
with NOTIFY_SOCKET and WATCHDOG_USEC pointing at it, and expects READY=1 (with
a STATUS= line), WATCHDOG=1 pings, then after SIGTERM STOPPING=1 and exit 0.
While it runs, the metrics port must answer /healthz 200 "ok", /readyz 200
"ready", /metrics with strata_build_info, and 404 for other paths.

Usage: stratad_notify_test.py STRATAD_BINARY
"""
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request


def http_get(url):
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def main():
    stratad = sys.argv[1]
    failures = []

    def expect(cond, what):
        print(("ok   " if cond else "FAIL ") + what, flush=True)
        if not cond:
            failures.append(what)

    with tempfile.TemporaryDirectory(prefix="strata-notify-") as work:
        sock_path = os.path.join(work, "notify.sock")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sock.bind(sock_path)
        sock.settimeout(20)
        env = dict(os.environ, NOTIFY_SOCKET=sock_path, WATCHDOG_USEC="400000")  # a ping every 200 ms
        log_path = os.path.join(work, "stratad.log")
        proc = subprocess.Popen([stratad, "--node-id", "node-1", "--listen", "127.0.0.1:0", "--metrics-listen",
                                 "127.0.0.1:0", "--data-dir", os.path.join(work, "data")],
                                env=env, stdout=open(log_path, "w"), stderr=subprocess.STDOUT)
        try:
            messages = []

            def receive_until(pred, what):
                while True:
                    try:
                        m = sock.recv(4096).decode()
                    except socket.timeout:
                        expect(False, what + " (nothing more came in 20 s)")
                        return None
                    messages.append(m)
                    if pred(m):
                        return m

            ready = receive_until(lambda m: "READY=1" in m.split("\n"), "READY=1 sent")
            if ready is not None:
                expect("STATUS=serving on 127.0.0.1:" in ready, "READY=1 carries STATUS=serving on the bound address")
                pings = 0
                for _ in range(2):
                    if receive_until(lambda m: m == "WATCHDOG=1", "WATCHDOG=1 ping") is not None:
                        pings += 1
                expect(pings == 2, "the watchdog is pinged while the server runs")

                line = re.search(r"ready: grpc=\S+ metrics=(\S+)", open(log_path).read())
                expect(line is not None, "the log names the metrics address")
                if line:
                    base = "http://" + line.group(1)
                    expect(http_get(base + "/healthz") == (200, "ok\n"), "/healthz answers 200 ok")
                    expect(http_get(base + "/readyz") == (200, "ready\n"), "/readyz answers 200 ready")
                    code, body = http_get(base + "/metrics")
                    expect(code == 200 and re.search(r'^strata_build_info\{.*version="', body, re.M) is not None,
                           "/metrics still served, with strata_build_info")
                    expect(re.search(r"^strata_disk_total_bytes\{.*\} [1-9]", body, re.M) is not None,
                           "/metrics has the data disk's size")
                    expect(http_get(base + "/nothing")[0] == 404, "other paths answer 404")

            proc.send_signal(signal.SIGTERM)
            stopping = receive_until(lambda m: "STOPPING=1" in m.split("\n"), "STOPPING=1 sent on SIGTERM")
            expect(stopping is not None, "STOPPING=1 sent on SIGTERM")
            expect(proc.wait(timeout=30) == 0, "stratad exits 0 after SIGTERM")
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        if failures:
            print(open(log_path).read())
    print("%d failed" % len(failures) if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
