"""Lifetimes and threads in the Python module (issue 19): every object keeps
alive what it uses, and no thread holds the GIL while it waits.

Each case runs in a fresh interpreter: a crash must not take the test session
with it, and one-time initialisation (numpy's, in particular) happens only once
per process, so only a fresh process can exercise its first use."""

import os
import signal
import subprocess
import sys
import textwrap

from conftest import SYNTHETIC_SAMPLES

import strata

PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(strata.__file__)))


def run_python(code, *args, timeout=120):
    """Runs `code` in a new interpreter with the same strata package; returns
    (exit status or "hung", stdout, stderr). A hang past `timeout` counts as a
    failure."""
    env = dict(os.environ, PYTHONPATH=PACKAGE_ROOT, PYTHONFAULTHANDLER="1")
    try:
        done = subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], env=env,
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        text = lambda out: out.decode(errors="replace") if isinstance(out, bytes) else out or ""  # noqa: E731
        return "hung", text(e.stdout), text(e.stderr)
    return done.returncode, done.stdout, done.stderr


def test_a_stream_keeps_its_temporary_client_alive(server, synthetic):
    status, output, errors = run_python("""
        import gc, sys, strata
        address, dataset = sys.argv[1], sys.argv[2]
        seen = []
        for batch in strata.Client(address).stream(dataset, batch_size=64, seed=3):
            gc.collect()  # the Client object is unreachable from here on
            assert len(bytes(batch.sample(0))) == int(batch.sizes[0])
            seen.extend(batch.ids.tolist())
        print(len(seen), len(set(seen)))
        stream = strata.Client(address).stream(dataset, batch_size=100, seed=1, device="cpu")
        gc.collect()
        print(sum(len(b) for b in stream))
        token = strata.Client(address).stream(dataset, batch_size=100, seed=1).resume_token()
        print(sum(len(b) for b in strata.Client(address).resume(token, batch_size=100)))
    """, server.address, synthetic)
    assert status == 0, output + errors
    assert output.split() == [str(SYNTHETIC_SAMPLES)] * 4, output


def test_threads_each_with_their_own_client_and_stream_do_not_deadlock(server, synthetic):
    # The first batch.ids of the process in four threads at once: numpy's
    # one-time initialisation must not be entered with the GIL held by a
    # thread that then waits for another.
    status, output, errors = run_python("""
        import sys, threading, strata
        address, dataset = sys.argv[1], sys.argv[2]
        counts = [0] * 4
        start = threading.Barrier(4)
        def consume(k):
            client = strata.Client(address)
            stream = client.stream(dataset, batch_size=50, seed=k)
            start.wait()
            for batch in stream:
                assert len(batch.ids) == len(batch.sizes) == len(batch.offsets)
                counts[k] += len(batch.ids)
        threads = [threading.Thread(target=consume, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        print(*counts)
    """, server.address, synthetic, timeout=60)
    assert status == 0, output + errors
    assert output.split() == [str(SYNTHETIC_SAMPLES)] * 4, output


def test_threads_sharing_one_client_each_with_a_stream(server, synthetic):
    status, output, errors = run_python("""
        import sys, threading, strata
        address, dataset = sys.argv[1], sys.argv[2]
        client = strata.Client(address)
        seen = [[] for _ in range(3)]
        streams = [client.stream(dataset, batch_size=20, rank=r, world=3, seed=11) for r in range(3)]
        del client  # the streams keep it alive
        def consume(rank):
            for batch in streams[rank]:
                seen[rank].extend(batch.ids.tolist())
        threads = [threading.Thread(target=consume, args=(r,)) for r in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        ids = [i for s in seen for i in s]
        print(len(ids), len(set(ids)))
    """, server.address, synthetic, timeout=60)
    assert status == 0, output + errors
    assert output.split() == [str(SYNTHETIC_SAMPLES)] * 2, output


def test_the_interpreter_exits_cleanly_while_a_daemon_thread_streams(server, synthetic):
    # CPython 3.11 ends a daemon thread that asks for the GIL during
    # finalization with pthread_exit; unwound through the GIL's restore it
    # aborted the process ("terminate called without an active exception").
    for depth in (0, 2, 0, 2):
        status, output, errors = run_python("""
            import sys, threading, time, strata
            address, dataset, depth = sys.argv[1], sys.argv[2], int(sys.argv[3])
            client = strata.Client(address)
            def prefetch():
                for epoch in range(1000000):
                    for batch in client.stream(dataset, batch_size=8, seed=1, epoch=epoch, prefetch_depth=depth):
                        pass
            threading.Thread(target=prefetch, daemon=True).start()
            time.sleep(0.3)
            print("main done")
        """, server.address, synthetic, str(depth), timeout=60)
        assert status == 0, f"prefetch_depth={depth}: {status}\n{output}{errors}"
        assert output.strip() == "main done" and "terminate" not in errors, errors


def test_resume_token_read_by_another_thread_during_iteration_always_decodes(server, synthetic):
    # A checkpoint thread reads the token while the training thread iterates:
    # it reads the position the stream's Next() left with the GIL held, never
    # a stream (or a prefetch queue's strings) being moved.
    status, output, errors = run_python("""
        import sys, threading, strata
        address, dataset = sys.argv[1], sys.argv[2]
        sys.setswitchinterval(1e-6)
        client = strata.Client(address)
        bad, good = [], 0
        for depth in (2, 0, 2, 0):
            stream = client.stream(dataset, batch_size=4, seed=depth, prefetch_depth=depth)
            done = False
            def watch():
                global good
                while not done:
                    token = stream.resume_token()
                    try:
                        strata.parse_resume_token(token)
                        good += 1
                    except strata.Error as e:
                        bad.append(str(e))
            t = threading.Thread(target=watch)
            t.start()
            steps = sum(1 for _ in stream)
            done = True
            t.join()
            assert strata.parse_resume_token(stream.resume_token())["step"] == steps
        print(good > 0, len(bad), bad[:3])
    """, server.address, synthetic, timeout=120)
    assert status == 0, output + errors
    assert output.split()[:2] == ["True", "0"], output


def test_ctrl_c_interrupts_a_prefetching_stream_waiting_on_a_stopped_node(work_dir, tmp_path):
    # A node stopped with SIGSTOP answers nothing: the stream's next() waits
    # for the stall timeout (5 s) and then fails over. SIGINT raises
    # KeyboardInterrupt in the waiting next() itself, before any failover.
    from conftest import Stratad

    node = Stratad(tmp_path)
    try:
        strata.Client(node.address).ingest("stalled", ({"key": f"k{i}", "fields": {"bin": b"x" * 64}}
                                                       for i in range(2000)))
        status, output, errors = run_python("""
            import os, signal, sys, threading, strata
            # Python leaves SIGINT alone when it starts ignored (a background
            # job of a shell, as CI's steps may be): handled here whatever the
            # parent did.
            signal.signal(signal.SIGINT, signal.default_int_handler)
            address, pid = sys.argv[1], int(sys.argv[2])
            stream = strata.Client(address).stream("stalled", batch_size=1, seed=1, prefetch_depth=2)
            next(stream)
            os.kill(pid, signal.SIGSTOP)
            threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
            try:
                for batch in stream:
                    pass
                print("ended")
            except KeyboardInterrupt as e:
                print("interrupted", e.__context__ is None)
            except strata.Error as e:
                print("failed", e.code)
            finally:
                os.kill(pid, signal.SIGCONT)
        """, node.address, str(node.proc.pid), timeout=60)
    finally:
        node.proc.send_signal(signal.SIGCONT)  # whatever the child did
        assert node.stop() == 0
    assert status == 0, output + errors
    assert output.split() == ["interrupted", "True"], output + errors
