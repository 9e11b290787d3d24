"""Shared test set-up: markers that skip cleanly without a GPU or without tileiras."""

from __future__ import annotations

import functools
import os
from pathlib import Path

import pytest

os.environ.setdefault("CUTILE_QUIET", "1")
# Every interpreted launch in the suite runs under the race and bounds detector: each
# hand-written kernel the checker accepts is also a soundness test.
os.environ.setdefault("CUTILE_INTERPRET", "check")


@functools.cache
def gpu_available() -> bool:
    if os.environ.get("CUTILE_BACKEND", "").lower() in ("interpreter", "cpu"):
        return False
    try:
        from cuda.bindings import driver

        res = driver.cuInit(0)
        if res[0] != driver.CUresult.CUDA_SUCCESS:
            return False
        return bool(driver.cuDeviceGetCount()[1])
    except Exception:
        return False


@functools.cache
def tileiras_available() -> bool:
    try:
        from cutile.backend.tileiras import find_tileiras

        find_tileiras()
        return True
    except Exception:
        return False


@functools.cache
def nvrtc_available() -> bool:
    try:
        from cutile.backend.nvrtc import nvjitlink_version, nvrtc_version

        nvrtc_version()
        nvjitlink_version()
        return True
    except Exception:
        return False


_BACKEND_AT_START = "unset"


def pytest_configure(config: pytest.Config) -> None:
    global _BACKEND_AT_START
    _BACKEND_AT_START = os.environ.get("CUTILE_BACKEND", "unset")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # A test module that sets CUTILE_BACKEND when it is imported switches the whole run to
    # the interpreter and silently skips every GPU test on a GPU machine: refuse it.
    now = os.environ.get("CUTILE_BACKEND", "unset")
    if now != _BACKEND_AT_START:
        raise pytest.UsageError(
            f"collecting the tests changed CUTILE_BACKEND ({_BACKEND_AT_START} -> {now}); "
            "set it in a fixture (monkeypatch.setenv), never at import")
    skip_gpu = pytest.mark.skip(reason="needs an NVIDIA GPU and driver")
    skip_tileiras = pytest.mark.skip(reason="needs tileiras (pip install 'cutile[tileiras]')")
    skip_nvrtc = pytest.mark.skip(reason="needs NVRTC and nvJitLink "
                                  "(pip install 'cutile[tileiras]')")
    for item in items:
        if "gpu" in item.keywords and not gpu_available():
            item.add_marker(skip_gpu)
        if "tileiras" in item.keywords and not tileiras_available():
            item.add_marker(skip_tileiras)
        if "nvrtc" in item.keywords and not nvrtc_available():
            item.add_marker(skip_nvrtc)


# A stand-in for tileiras: a real executable that answers `--version` and
# `--list-versions` like the real one and "assembles" by writing a marker, the target and
# the bytecode to the output, so different kernels give different cubins. It appends one
# line per assembly to $FAKE_TILEIRAS_LOG (to count runs across threads and processes),
# writes its pid to $FAKE_TILEIRAS_PID, and sleeps $FAKE_TILEIRAS_SLEEP seconds first.
# $FAKE_TILEIRAS_HANG=N turns it into a `sleep N` with the same pid that never assembles.
FAKE_TILEIRAS = r"""#!/bin/sh
case "$1" in
  --version) echo "tileiras: NVIDIA (R) Cuda Tile IR optimizing assembler (fake)"
             echo "Cuda compilation tools, release 13.4, V13.4.1"; exit 0 ;;
  --list-versions) printf '13.1\n13.2\n13.3\n13.4\n'; exit 0 ;;
esac
[ -n "$FAKE_TILEIRAS_LOG" ] && echo "$$ $*" >> "$FAKE_TILEIRAS_LOG"
[ -n "$FAKE_TILEIRAS_PID" ] && echo "$$" > "$FAKE_TILEIRAS_PID"
[ -n "$FAKE_TILEIRAS_SLEEP" ] && sleep "$FAKE_TILEIRAS_SLEEP"
[ -n "$FAKE_TILEIRAS_HANG" ] && exec sleep "$FAKE_TILEIRAS_HANG"
out=""; src=""; arch=""
while [ $# -gt 0 ]; do
  case "$1" in
    -o) out="$2"; shift 2 ;;
    --gpu-name) arch="$2"; shift 2 ;;
    -O*) shift ;;
    *) src="$1"; shift ;;
  esac
done
printf 'FAKECUBIN %s\n' "$arch" > "$out" && cat "$src" >> "$out"
"""


@pytest.fixture
def fake_tileiras(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The path of a fresh fake tileiras (see FAKE_TILEIRAS); point CUTILE_TILEIRAS at it."""
    path = tmp_path_factory.mktemp("fake-tileiras") / "tileiras"
    path.write_text(FAKE_TILEIRAS)
    path.chmod(0o755)
    return path
