"""What a kernel said when it called something that is not kernel code (CT0007), and what
to write instead: a numpy or `math` function has a
`cutile.core` counterpart (or none), a Python builtin is one kernels lack, and a helper of
the program's own becomes kernel code with `@cutile.device`."""

from __future__ import annotations

import builtins
import types
from typing import Any

from .diagnostics import FrontendError, fail
from .kast import Span

# Libraries whose functions compute on the host: their math has `cutile.core` twins.
_HOST_MATH = ("numpy", "math", "cmath", "torch", "cupy", "jax", "scipy")


def _core_ops() -> dict[str, Any]:
    from .. import core

    return {n: getattr(core, n) for n in core.__all__
            if isinstance(getattr(getattr(core, n), "__cutile_op__", None), str)}


def _math_ops() -> str:
    from ..core import UNARY_MATH

    names = [*UNARY_MATH, "maximum", "minimum", "pow", "where", "sum", "max", "min", "prod",
             "mma"]
    return ", ".join(f"`{n}`" for n in names)


def foreign_call(value: Any, sp: Span, py_builtins: set[str]) -> FrontendError:
    """The CT0007 error for calling `value` inside a kernel."""
    name = getattr(value, "__name__", None) or type(value).__name__
    module = getattr(value, "__module__", None) or ""
    if getattr(builtins, name, None) is value:
        have = ", ".join(f"`{b}`" for b in sorted(py_builtins))
        return fail(
            "CT0007", f"`{name}` is a Python builtin kernels do not have", sp, "not in kernels",
            help=f"kernels have the builtins {have}, and the operations of `cutile.core`",
        )
    root = module.split(".")[0]
    if root in _HOST_MATH:
        shown = f"{module}.{name}" if module != "builtins" else name
        twin = _core_ops().get(name)
        if twin is not None:
            help = (f"use `cutile.core.{name}` (`from cutile.core import {name}`); "
                    f"`{shown}` runs on the host")
        else:
            help = (f"`{shown}` runs on the host; a kernel computes with the operations of "
                    f"`cutile.core`: {_math_ops()}")
        return fail("CT0007", f"`{shown}` is a host function, not kernel code", sp,
                    "host function", help=help)
    what = getattr(value, "__qualname__", name)
    if isinstance(value, types.FunctionType):
        return fail(
            "CT0007", f"`{what}` is a plain Python function; kernels can only call cutile "
            "operations and `@cutile.device` functions", sp, "not a kernel function",
            help=f"decorate `{what}` with `@cutile.device` to make it kernel code (it is "
            "inlined where it is called)",
        )
    return fail(
        "CT0007", f"`{what}` ({type(value).__name__}) cannot be called in a kernel; kernels "
        "call cutile operations and `@cutile.device` functions", sp, "not kernel code",
        help="compute it on the host and pass the result as an argument (a scalar, a "
        "`Const`, or a tensor)",
    )
