"""Every soundness test runs on the CPU interpreter, even on a machine with a GPU: the race
and bounds detector that judges an accepted kernel lives there. Forced per test (not at
import), so collecting this folder never changes the backend of the rest of the suite."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cutile.runtime import driver


@pytest.fixture(autouse=True)
def _on_the_interpreter(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("CUTILE_BACKEND", "interpreter")
    driver.reset_for_tests("interpreter")
    yield
    monkeypatch.undo()
    driver.reset_for_tests(None)
