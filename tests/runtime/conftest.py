"""Fixtures of the runtime tests."""

from __future__ import annotations

import gc

import pytest

import cutile


@pytest.fixture
def settled() -> None:
    """Finish the work in flight and collect the garbage earlier tests left (cycles that
    hold tensors) before a test counts the runtime's live storages: otherwise the collector
    may free those storages in the middle of the count (it did, once the docs tests ran
    first in the suite)."""
    cutile.synchronize()
    gc.collect()
    cutile.synchronize()
