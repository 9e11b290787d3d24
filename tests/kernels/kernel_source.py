"""Kernels written as text by the tests (a kernel is read from its source file, so the text
goes to a file first and is imported from there)."""

from __future__ import annotations

import importlib.util
import itertools
from pathlib import Path
from typing import Any

HEADER = "import cutile\nfrom cutile.core import *\n\n"
_names = itertools.count()


def load_kernel(tmp_path: Any, src: str, name: str = "k") -> Any:
    """The kernel `name` of a module whose source is HEADER + `src`."""
    module = f"kern_{next(_names)}"
    path = Path(str(tmp_path)) / f"{module}.py"
    path.write_text(HEADER + src)
    spec = importlib.util.spec_from_file_location(module, path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return getattr(mod, name)
