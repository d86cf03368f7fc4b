"""A PEP 517 build backend for the strata wheel (pyproject.toml): CMake builds
the module for the interpreter running the backend, make_wheel.py packs it.
Nothing is downloaded. The build directory is build/wheel-<tag> under the
source tree, or $STRATA_WHEEL_BUILD_DIR, or config setting "build-dir"."""

import glob
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def get_requires_for_build_wheel(config_settings=None):
    return []


def _build_dir(config_settings):
    given = (config_settings or {}).get("build-dir") or os.environ.get("STRATA_WHEEL_BUILD_DIR")
    return given or os.path.join(ROOT, "build", "wheel-" + sys.implementation.cache_tag)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    build = _build_dir(config_settings)
    configure = ["cmake", "-S", ROOT, "-B", build, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
                 f"-DSTRATA_WHEEL_PYTHON={sys.executable}"]
    if shutil.which("ccache"):
        configure += ["-DCMAKE_C_COMPILER_LAUNCHER=ccache", "-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"]
    subprocess.check_call(configure, stdout=sys.stderr)
    subprocess.check_call(["cmake", "--build", build, "--target", "strata_wheel"], stdout=sys.stderr)
    version = "%d%d" % sys.version_info[:2]
    wheels = glob.glob(os.path.join(build, "client", "python", "dist", f"strata-*-cp{version}-*.whl"))
    if len(wheels) != 1:
        raise RuntimeError(f"expected one wheel for cp{version} in {build}, found {wheels}")
    os.makedirs(wheel_directory, exist_ok=True)
    shutil.copy(wheels[0], wheel_directory)
    return os.path.basename(wheels[0])


def build_sdist(sdist_directory, config_settings=None):
    raise RuntimeError("strata has no sdist: build a wheel from the source tree (pip wheel --no-build-isolation .)")
