"""Device check: a real stratad, a dataset ingested from Python, epochs streamed
with device=None / "cpu" / "cuda"; payloads checked on the GPU; throughput and
copy/compute overlap; then strata-device-train-example on the same server."""
import contextlib, os, subprocess, sys, tempfile, time
from pathlib import Path
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "python"))
import conftest  # noqa: E402  (Stratad, binaries from STRATA_BUILD_DIR)
import strata, torch  # noqa: E402

GPU = torch.cuda.is_available()
TD = "cuda" if GPU else "cpu"
sync = torch.cuda.synchronize if GPU else (lambda: None)
N, SIZE, BS = int(os.environ.get("N", 2048)), 256 * 1024, 16
# COPY_THREADS: the staging rings' copy_threads to compare ("1,0": one thread
# beside the automatic count); OVERLAP_ONLY=1 skips all but the overlap runs;
# REPS: overlap runs of each kind.
COPY_THREADS = [int(x) for x in os.environ.get("COPY_THREADS", "0").split(",")]
OVERLAP_ONLY, REPS = os.environ.get("OVERLAP_ONLY") == "1", int(os.environ.get("REPS", 1))

def payload(i):
    return (i.to_bytes(8, "little") + bytes([i & 0xFF]) * 56) * (SIZE // 64)

work = Path(tempfile.mkdtemp(prefix="strata-gpu-"))
srv = conftest.Stratad(work)
try:
    client = strata.Client(srv.address)
    t = time.time()
    s = client.ingest("gpu", ({"key": f"k{i}", "label": f"c{i % 10}", "fields": {"bin": payload(i)}} for i in range(N)))
    print(f"ingest {N} x {SIZE} B: {time.time() - t:.2f} s", s["dataset"]["samples"], flush=True)
    print("staging_path(cuda):", strata.staging_path("cuda"))
    expect = torch.zeros((N, SIZE), dtype=torch.uint8, device=TD)
    for i in range(N):
        expect[i] = torch.frombuffer(bytearray(payload(i)), dtype=torch.uint8).to(TD)
    # 1. correctness on the GPU, one epoch
    st = client.stream("gpu", batch_size=BS, seed=7, device=TD)
    print("stream.device:", st.device)
    seen = 0
    for b in st:
        x = b.torch()
        assert x.is_cuda == GPU and x.data_ptr() == b.data_ptr, "not a device tensor over the slot"
        ids = torch.as_tensor(b.ids.astype("int64"), device=TD)
        assert int(b.sizes.min()) == SIZE == int(b.sizes.max())
        got = x.view(len(b), SIZE)
        assert torch.equal(got, expect[ids]), f"payload mismatch at step {b.step}"
        seen += len(b)
    assert seen == N, seen
    print(f"correct: {seen} samples checked on the GPU", flush=True)
    # 2. throughput: device None / cpu / cuda (touching the tensor), 3 epochs each
    def run(device, compute_ms=0.0, epochs=3, copy_threads=0):
        cs = torch.cuda.Stream() if GPU else None
        kw = {"cuda_stream": cs.cuda_stream} if device == "cuda" else {}
        if device is not None: kw["copy_threads"] = copy_threads
        a = torch.randn(2048 if GPU else 64, 2048 if GPU else 64, device=TD)
        nbytes = 0
        sync(); t0 = time.perf_counter()
        with (torch.cuda.stream(cs) if GPU else contextlib.nullcontext()):
            for e in range(epochs):
                for b in client.stream("gpu", batch_size=BS, seed=e, epoch=e, device=device, **kw):
                    x = b.torch()
                    if device != "cuda":
                        x = x.to(TD, non_blocking=False)
                    x[:1].sum()
                    for _ in range(int(compute_ms)):
                        a = a @ a; a = a / a.norm()
                    nbytes += b.nbytes
        sync()
        dt = time.perf_counter() - t0
        return nbytes / dt / 1e9, dt
    # one matmul's duration
    a = torch.randn(2048 if GPU else 64, 2048 if GPU else 64, device=TD); sync(); t0 = time.perf_counter()
    for _ in range(200): a = a @ a; a = a / a.norm()
    sync(); mm = (time.perf_counter() - t0) / 200
    print(f"one 2048^3 fp32 matmul+norm: {mm * 1e3:.3f} ms")
    for dev in ((None, "cpu", "cuda") if GPU and not OVERLAP_ONLY else (None, "cpu") if not OVERLAP_ONLY else ()):
        for rep in range(2):
            gbs, dt = run(dev)
            print(f"device={dev!s:5} rep{rep}: {gbs:6.2f} GB/s delivered to the GPU ({dt:.2f} s, 3 epochs)", flush=True)
    steps = 3 * N // BS
    for k in (2, 8):
        comp = None
        sync(); t0 = time.perf_counter()
        for _ in range(steps * k): a = a @ a; a = a / a.norm()
        sync(); comp = time.perf_counter() - t0
        for rep in range(REPS):
            for dev, ct in [(d, c) for d in ("cuda" if GPU else "cpu",) for c in COPY_THREADS] + [(None, 0)]:
                _, copy = run(dev, copy_threads=ct)
                _, both = run(dev, compute_ms=k, copy_threads=ct)
                ov = (copy + comp - both) / min(copy, comp)
                name = f"device={dev!s:5}" + (f" copy_threads={ct}" if dev else "")
                print(f"compute {k} matmuls/step: {name} copy {copy:.2f} s, compute {comp:.2f} s, both {both:.2f} s, overlap {ov:.2f}", flush=True)
    if OVERLAP_ONLY: sys.exit(0)
    # 3. the C++ example on the GPU
    ex = Path(os.environ["STRATA_BUILD_DIR"]) / "client" / "strata-device-train-example"
    r = subprocess.run([str(ex), "--server", srv.address, "--dataset", "gpu", "--batch-size", "64", "--epochs", "2"],
                       capture_output=True, text=True, timeout=120)
    print("device-train-example rc", r.returncode); print(r.stdout[-3000:]); print(r.stderr[-3000:])
finally:
    print("stratad exit", srv.stop())
