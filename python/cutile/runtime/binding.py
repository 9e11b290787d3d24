"""What a launch was bound to, as Python code reads it, and the normalization of argument
values the native binder cannot read.

The binder itself is native (`cutile-host`, `launch_plan/bind.rs`): it places positional
and keyword arguments, infers `Const`s, checks every argument and makes every error. Python
only turns values the binder has no reading for (numpy scalars) into plain Python numbers
and asks again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..frontend import kast as K
from ..lowering.signature import Specialization, TensorFacts


@dataclass
class Binding:
    """One launch's parameters (consts excluded), values, `Const`s, specialization and grid,
    read back from the native op (`op.binding`)."""

    kernel: str
    params: list[K.Param]  # non-const parameters, in order
    values: list[Any]
    consts: dict[str, int | float | bool]
    spec: Specialization
    grid: tuple[int, int, int]


def normalize(value: Any) -> Any:
    """A numpy scalar as the Python number it holds; anything else unchanged (the binder
    then accepts it or says what is wrong with it)."""
    item = getattr(value, "item", None)
    if item is not None and type(value).__module__ == "numpy" and getattr(value, "ndim", 1) == 0:
        return item()
    return value


def specialization(consts: list[tuple[str, Any]], facts: list[tuple[Any, ...]],
                   index_bits: int) -> Specialization:
    """The specialization the native launcher reports for a launch."""
    return Specialization(
        tuple(consts),
        tuple((name, TensorFacts(dtype, rank, a16, last1, tuple(sd), tuple(std)))
              for name, dtype, rank, a16, last1, sd, std in facts),
        index_bits,
    )
