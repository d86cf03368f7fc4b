"""Packs the strata wheel: the native module built for one interpreter and the
pure-Python files, as strata-VERSION-TAG.whl (PEP 427), with the standard
library only. Called by the build (wheel.cmake) and by pyproject.toml's backend.

    make_wheel.py --python PY --module _strata*.so --version V --out DIR strata/*.py

The module links Debian's shared libraries (gRPC, protobuf, ...): the wheel
installs on machines that have them (deploy/setup-debian.sh), into any
environment of the interpreter it was built for. numpy and torch are optional.
"""

import argparse
import base64
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

TAG_SCRIPT = ("import sys, sysconfig; v = sys.version_info; "
              "print('cp%d%d' % v[:2]); print(sysconfig.get_platform().replace('-', '_').replace('.', '_'))")


def record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", required=True, help="the interpreter the module was built for")
    parser.add_argument("--module", required=True, help="the built _strata extension")
    parser.add_argument("--version", required=True)
    parser.add_argument("--out", required=True, help="directory for the .whl")
    parser.add_argument("files", nargs="+", help="the package's .py files")
    args = parser.parse_args()

    python_tag, platform_tag = subprocess.check_output([args.python, "-c", TAG_SCRIPT], text=True).split()
    tag = f"{python_tag}-{python_tag}-{platform_tag}"
    dist_info = f"strata-{args.version}.dist-info"
    entries = []
    for path in args.files:
        with open(path, "rb") as f:
            entries.append((f"strata/{os.path.basename(path)}", f.read()))
    with tempfile.TemporaryDirectory() as tmp:  # the module without its debug info: a third of the size
        module = os.path.join(tmp, os.path.basename(args.module))
        shutil.copyfile(args.module, module)
        if shutil.which("strip"):
            subprocess.check_call(["strip", "--strip-debug", module])
        with open(module, "rb") as f:
            entries.append((f"strata/{os.path.basename(args.module)}", f.read()))
    metadata = "\n".join([
        "Metadata-Version: 2.1",
        "Name: strata",
        f"Version: {args.version}",
        "Summary: Batches from a strata cluster, zero-copy into numpy and PyTorch",
        "Requires-Python: >=3.9",
        "Provides-Extra: numpy",
        "Requires-Dist: numpy; extra == 'numpy'",
        "Provides-Extra: torch",
        "Requires-Dist: torch; extra == 'torch'",
        "", ""])
    wheel = "\n".join(["Wheel-Version: 1.0", "Generator: strata make_wheel.py", "Root-Is-Purelib: false",
                       f"Tag: {tag}", "", ""])
    entries.append((f"{dist_info}/METADATA", metadata.encode()))
    entries.append((f"{dist_info}/WHEEL", wheel.encode()))
    record = [record_line(name, data) for name, data in entries] + [f"{dist_info}/RECORD,,"]
    entries.append((f"{dist_info}/RECORD", ("\n".join(record) + "\n").encode()))

    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, f"strata-{args.version}-{tag}.whl")
    tmp = path + ".tmp"
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in entries:
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))  # reproducible
            info.external_attr = (0o755 if name.endswith(".so") else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    os.replace(tmp, path)
    print(path)


if __name__ == "__main__":
    sys.exit(main())
