"""Backend test fixtures. `tests/conftest.py` skips `@pytest.mark.tileiras` tests when no
assembler is installed; the `tool` fixture hands the located one to a test."""

from __future__ import annotations

import pytest

from cutile.backend.tileiras import Tileiras, find_tileiras
from cutile.errors import CompileError


@pytest.fixture(scope="session")
def tool() -> Tileiras:
    try:
        return find_tileiras()
    except CompileError:
        pytest.skip("no tileiras found (pip install 'cutile[tileiras]')")
