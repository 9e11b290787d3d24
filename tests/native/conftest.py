"""Tests of `cutile._native` (the PyO3 module built from rust/cutile-py).

They import the extension directly; build it first with
`VIRTUAL_ENV=/work/venv maturin develop --release` (or install a wheel).
"""

import pytest

native = pytest.importorskip("cutile._native", reason="cutile._native is not built")
