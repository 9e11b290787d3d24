"""Fixtures of the kernel tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cutile.runtime import driver


@pytest.fixture
def interpreter(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The race detector watches interpreted launches: run on the interpreter even where
    there is a GPU, with CUTILE_INTERPRET unset unless the test sets it."""
    monkeypatch.delenv("CUTILE_INTERPRET", raising=False)
    if driver.backend() == "interpreter":
        yield
        return
    driver.reset_for_tests("interpreter")
    try:
        yield
    finally:
        driver.reset_for_tests(None)
