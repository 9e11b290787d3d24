"""The interpreter's machine: runs an entry once per tile block, op by op.

Tile blocks run sequentially, x fastest, then y, then z (for z: for y: for x). Ops run in
program order, so tokens only need to exist (they carry no data). Each tile block gets a
fresh value environment; SSA values of enclosing blocks stay visible inside regions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import InterpreterError
from ..ir.core import Block, Function, Module, Op, Value
from ..ir.types import PointerType, TileType
from .memory import Memory, MemoryFault, Pointer
from .race import Detector, TensorArg
from .registry import HANDLERS, TERMINATORS, Handler
from .values import Array, freeze, from_host


class Signal:
    """How a block ended: `kind` is the terminator's name (`yield`, `continue`, `break`,
    `return`) or `end` for a block without one; `values` are its operands."""

    __slots__ = ("kind", "values")

    def __init__(self, kind: str, values: list[Any]) -> None:
        self.kind = kind
        self.values = values

    def __repr__(self) -> str:
        return f"Signal({self.kind}, {len(self.values)} values)"


_NORMAL, _TERMINATOR, _REGION = 0, 1, 2
Compiled = list[tuple[int, Handler | None, Op, list[Value], list[Value]]]


class Machine:
    def __init__(self, module: Module, grid: tuple[int, int, int],
                 detector: Detector | None = None) -> None:
        self.module = module
        self.grid = grid
        self.block_id: tuple[int, int, int] = (0, 0, 0)
        self.memory = Memory()
        # The memory handlers test this once per access; None keeps unchecked runs as fast
        # as before the detector existed.
        self.detector = detector
        self.env: dict[Value, Any] = {}
        # Per-op caches that outlive one tile block (constants, reduce fast paths).
        self.cache: dict[Op, Any] = {}
        self._compiled: dict[Block, Compiled] = {}

    # -- compilation: one handler lookup per op, up front ------------------------------------

    def compile(self, block: Block) -> Compiled:
        done = self._compiled.get(block)
        if done is not None:
            return done
        out: Compiled = []
        for op in block.ops:
            if op.name in TERMINATORS:
                out.append((_TERMINATOR, None, op, op.operands, op.results))
                continue
            fn = HANDLERS.get(op.name)
            if fn is None:
                raise self.error(op, f"op `{op.name}` is not supported by the interpreter")
            out.append((_REGION if op.regions else _NORMAL, fn, op, op.operands, op.results))
            for region in op.regions:
                self.compile(region)
        self._compiled[block] = out
        return out

    # -- execution ---------------------------------------------------------------------------

    def run_block(self, block: Block, args: Sequence[Any] = ()) -> Signal:
        env = self.env
        if len(args) != len(block.args):
            raise InterpreterError(
                f"a block with {len(block.args)} arguments got {len(args)} values",
                block_id=self.block_id,
            )
        for param, value in zip(block.args, args, strict=False):
            env[param] = value
        for kind, fn, op, operands, results in self.compile(block):
            try:
                vals = [env[v] for v in operands]
                if kind == _TERMINATOR:
                    return Signal(op.name, vals)
                assert fn is not None
                out = fn(self, op, vals)
                if kind == _REGION and type(out) is Signal:
                    return out
                if len(out) != len(results):
                    raise InterpreterError(
                        f"handler produced {len(out)} values for {len(results)} results"
                    )
                for r, v in zip(results, out, strict=False):
                    env[r] = v
            except InterpreterError as exc:
                if exc.op is None:
                    exc.op = op.name
                    exc.location = exc.location or (str(op.loc) if op.loc else None)
                    exc.block_id = self.block_id
                raise
            except KeyError as exc:
                if isinstance(exc.args[0], Value):
                    raise self.error(
                        op, f"use of a value not defined here: {exc.args[0]!r}"
                    ) from exc
                raise self.error(op, f"{type(exc).__name__}: {exc}") from exc
            except (MemoryFault, ValueError, TypeError, ArithmeticError, IndexError) as exc:
                raise self.error(op, str(exc) or type(exc).__name__) from exc
        return Signal("end", [])

    def error(self, op: Op, message: str) -> InterpreterError:
        return InterpreterError(
            message,
            location=str(op.loc) if op.loc else None,
            op=op.name,
            block_id=self.block_id,
        )


def _bind_params(machine: Machine, fn: Function, args: Sequence[object],
                 tensors: Sequence[TensorArg | None] | None = None) -> list[Any]:
    if len(args) != len(fn.params):
        raise InterpreterError(f"`{fn.name}` takes {len(fn.params)} arguments, got {len(args)}")
    if tensors is not None and len(tensors) != len(args):
        raise InterpreterError(f"{len(tensors)} tensor descriptions for {len(args)} arguments")
    detector = machine.detector
    values: list[Any] = []
    for i, (param, arg) in enumerate(zip(fn.params, args, strict=False)):
        ty = param.type
        if not isinstance(ty, TileType) or ty.shape != ():
            raise InterpreterError(f"entry parameter {i} has type {ty}; entries take rank-0 tiles")
        if isinstance(ty.element, PointerType):
            if not isinstance(arg, Pointer):
                raise InterpreterError(
                    f"argument {i} of `{fn.name}` is a {ty}; pass a cutile.interpreter.Pointer, "
                    f"not {type(arg).__name__}"
                )
            try:
                if detector is None:
                    address = machine.memory.address_of(arg)
                else:
                    region = machine.memory.region_for(arg, tag=i)
                    address = region.base + arg.byte_offset
                    detector.bind(region, arg, i, ty.element.pointee.itemsize,
                                  tensors[i] if tensors is not None else None)
            except MemoryFault as exc:
                raise InterpreterError(f"argument {i}: {exc}") from exc
            values.append(freeze(np.array(address, dtype=np.int64)))
        else:
            if isinstance(arg, Pointer):
                raise InterpreterError(f"argument {i} of `{fn.name}` is a {ty}, not a pointer")
            try:
                value: Array = from_host(arg, ty)
            except (OverflowError, TypeError, ValueError) as exc:
                raise InterpreterError(f"argument {i} of `{fn.name}`: {exc}") from exc
            values.append(freeze(value))
    return values


def run(
    module: Module,
    entry: str,
    grid: tuple[int, int, int] | Sequence[int],
    args: Sequence[object],
    *,
    check: bool = False,
    tensors: Sequence[TensorArg | None] | None = None,
) -> None:
    """Run `entry` of `module` once per tile block of `grid` on the CPU.

    Tile blocks run one after another, x fastest (for z: for y: for x). `args` holds one
    value per entry parameter: a `Pointer` for `tile<ptr<T>>`, a Python or numpy scalar for
    the others. Writes land in the pointers' host buffers. Any fault is an InterpreterError
    naming the op, its source location and the tile block.

    `check=True` runs the race and bounds detector (`cutile.interpreter.race`): the first
    element two blocks could touch concurrently on the GPU, or an access outside its
    argument, raises a RaceError before memory changes. `tensors` (one entry per argument,
    None for scalars) names the pointer arguments and gives their layouts, so reports say
    `z[3, 17]`; without it they say `arg0[...]` over the pointee type, to the buffer's end."""
    # Import for the side effect of filling the dispatch table.
    from . import ops_arith, ops_control, ops_convert, ops_memory, ops_reduce, ops_shape  # noqa: F401

    try:
        fn = module.function(entry)
    except KeyError:
        raise InterpreterError(f"module `{module.name}` has no function `{entry}`") from None
    g = tuple(int(n) for n in grid)
    if len(g) != 3 or any(n < 1 for n in g):
        raise InterpreterError(f"grid must be three positive sizes, got {tuple(grid)}")
    gx, gy, gz = g
    detector = Detector(fn.name, (gx, gy, gz)) if check else None
    machine = Machine(module, (gx, gy, gz), detector)
    machine.compile(fn.body)
    params = _bind_params(machine, fn, args, tensors)
    with np.errstate(all="ignore"):
        for z in range(gz):
            for y in range(gy):
                for x in range(gx):
                    machine.block_id = (x, y, z)
                    if detector is not None:
                        detector.block = x + gx * (y + gy * z)
                    machine.env = {}
                    machine.run_block(fn.body, params)
