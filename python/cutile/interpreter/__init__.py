"""CPU interpreter for Tile IR: runs the same `Module` the bytecode writer encodes, with numpy.

    from cutile.interpreter import Pointer, run
    run(module, "add", grid=(8, 1, 1), args=[Pointer.to(z), Pointer.to(x), Pointer.to(y)])

One meaning per op: each handler follows the `cuda_tile` spec (Ops.td / Types.td), so a
kernel means the same on the CPU as on the GPU. Tile blocks run sequentially, x fastest
(for z: for y: for x); ops run in program order, so tokens only need to exist. Faults (an
access outside every buffer, a failed `assert`, a tile index outside a partition, an
integer division by zero, a broken `assume`) raise `InterpreterError` with the op's source
location and the tile block.

Race and bounds detector: `run(..., check=True)`, `CUTILE_INTERPRET=check` or
`with check_races():` watches every access of a launch and raises `cutile.RaceError` on the
first element two tile blocks could touch concurrently on the GPU (write-write, read-write;
atomics among themselves are fine) and on any access outside its argument (see `race.py`).

Numerics: f16/bf16 compute in f32 and round to nearest-even after each op (bf16 is emulated
in f32 storage, no ml_dtypes); tf32 is f32 rounded to 10 mantissa bits; mmaf multiplies and
sums in f64 and rounds once to the accumulator type. Loads past a tensor's end through a
view without padding (and masked-off pointer loads without padding) read a poison value:
NaN for floats, bytes 0xA5 for integers, true for i1.
"""

from __future__ import annotations

import importlib
from typing import Any

from ..errors import InterpreterError, RaceError
from .race_mode import check_races, checking

# The machine and its op handlers load on first use: `import cutile` (which needs only the
# race mode above) should not pay for numpy-heavy modules a GPU program never runs.
_LAZY = {
    "Machine": "machine", "Signal": "machine", "run": "machine", "Pointer": "memory",
    "TensorArg": "race", "HANDLERS": "registry", "poison": "values",
}
_HANDLER_MODULES = ("ops_arith", "ops_control", "ops_convert", "ops_memory", "ops_reduce",
                    "ops_shape")


def _load_handlers() -> None:
    for name in _HANDLER_MODULES:
        importlib.import_module(f".{name}", __name__)


def __getattr__(name: str) -> Any:
    if name in _HANDLER_MODULES:
        return importlib.import_module(f".{name}", __name__)
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    _load_handlers()  # every way in can run a kernel: register the handlers first
    value = getattr(importlib.import_module(f".{where}", __name__), name)
    globals()[name] = value
    return value


def supported_ops() -> list[str]:
    """The names of the Tile IR ops the interpreter executes."""
    _load_handlers()
    from .registry import HANDLERS

    return sorted([*HANDLERS, "yield", "continue", "break", "return"])


__all__ = [
    "HANDLERS",
    "InterpreterError",
    "Machine",
    "Pointer",
    "RaceError",
    "Signal",
    "TensorArg",
    "check_races",
    "checking",
    "ops_arith",
    "ops_control",
    "ops_convert",
    "ops_memory",
    "ops_reduce",
    "ops_shape",
    "poison",
    "run",
    "supported_ops",
]
