"""IR test fixtures. The printer is checked against `tileirdisasm` on the kernels that the
backend tests build, so their builders (tests/backend/sample_kernels.py) are importable here."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from cutile.backend.tileiras import Tileiras, find_tileiras
from cutile.errors import CompileError

_BACKEND_TESTS = str(Path(__file__).resolve().parents[1] / "backend")
if _BACKEND_TESTS not in sys.path:
    sys.path.append(_BACKEND_TESTS)


@pytest.fixture(scope="session")
def tool() -> Tileiras:
    try:
        return find_tileiras()
    except CompileError:
        pytest.skip("no tileiras found (pip install 'cutile[tileiras]')")
