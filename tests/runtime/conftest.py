"""Fixtures of the runtime tests."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

import cutile
from cutile.runtime import driver


@pytest.fixture
def settled() -> None:
    """Finish the work in flight and collect the garbage earlier tests left (cycles that
    hold tensors) before a test counts the runtime's live storages: otherwise the collector
    may free those storages in the middle of the count (it did, once the docs tests ran
    first in the suite)."""
    cutile.synchronize()
    gc.collect()
    cutile.synchronize()


@pytest.fixture
def one_process_two_devices(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The interpreter modelling two devices, in a world of one process (no torchrun
    variables, no device chosen by the environment), distributed state fresh."""
    for var in ("WORLD_SIZE", "RANK", "LOCAL_RANK", "CUTILE_DEVICE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("CUTILE_INTERPRETER_DEVICES", "2")
    driver.reset_for_tests("interpreter")
    cutile.distributed.destroy()
    yield
    cutile.distributed.destroy()
    monkeypatch.undo()
    driver.reset_for_tests(None)


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh kernel and autotune cache, and no `CUTILE_AUTOTUNE` override (the autotuning
    tests use it for every test)."""
    where = tmp_path / "cache"
    monkeypatch.setenv("CUTILE_CACHE_DIR", str(where))
    monkeypatch.delenv("CUTILE_AUTOTUNE", raising=False)
    return where
