"""Shared test set-up: markers that skip cleanly without a GPU or without tileiras."""

from __future__ import annotations

import functools
import os

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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    skip_gpu = pytest.mark.skip(reason="needs an NVIDIA GPU and driver")
    skip_tileiras = pytest.mark.skip(reason="needs tileiras (pip install 'cutile[tileiras]')")
    for item in items:
        if "gpu" in item.keywords and not gpu_available():
            item.add_marker(skip_gpu)
        if "tileiras" in item.keywords and not tileiras_available():
            item.add_marker(skip_tileiras)
