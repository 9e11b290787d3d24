"""Kernels written as text by the tests (a kernel is read from its source file, so the text
goes to a file first and is imported from there)."""

from __future__ import annotations

import importlib.util
import itertools
import sys
from pathlib import Path
from types import ModuleType
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


EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def load_example(name: str, alias: str = "example") -> ModuleType:
    """examples/`name`.py as a module named `alias_name` (registered in sys.modules: the
    frontend reads a kernel's module to resolve its globals)."""
    spec = importlib.util.spec_from_file_location(f"{alias}_{name.replace('/', '_')}",
                                                  EXAMPLES / f"{name}.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod
