"""Builds Tile IR ops with their result types worked out.

Attribute names follow `Ops.td`; enum-valued attributes are plain strings spelled as in the
textual form (`"nearest_even"`, `"signed"`, `"less_than"`, `"weak"`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from .. import dtypes as dt
from ..dtypes import DType
from .attrs import AssumePredicate, Dense
from .core import Block, Function, Location, Module, Op, Value
from .types import (
    TOKEN,
    PartitionViewType,
    PointerType,
    TensorViewType,
    TileType,
    Type,
    scalar,
)

FLOAT_BINARY = {"addf", "subf", "mulf", "divf"}


class Builder:
    """Appends ops to a current block; `loc` is stamped on every op created."""

    def __init__(self, module: Module | None = None) -> None:
        self.module = module or Module("cutile")
        self.block: Block | None = None
        self.loc: Location | None = None

    # -- structure -------------------------------------------------------------------------

    def entry(self, name: str, param_types: Sequence[Type], loc: Location | None = None) -> Function:
        params = [Value(t, f"arg{i}") for i, t in enumerate(param_types)]
        fn = Function(name, params, Block(args=list(params)), is_entry=True, loc=loc)
        self.module.functions.append(fn)
        self.block = fn.body
        self.loc = loc
        return fn

    @contextmanager
    def at(self, block: Block) -> Iterator[Block]:
        saved = self.block
        self.block = block
        try:
            yield block
        finally:
            self.block = saved

    @contextmanager
    def location(self, loc: Location | None) -> Iterator[None]:
        saved = self.loc
        if loc is not None:
            self.loc = loc
        try:
            yield
        finally:
            self.loc = saved

    def op(
        self,
        name: str,
        operands: Sequence[Value],
        result_types: Sequence[Type],
        attrs: dict[str, Any] | None = None,
        regions: Sequence[Block] = (),
    ) -> Op:
        if self.block is None:
            raise RuntimeError("builder has no insertion block")
        op = Op(
            name,
            list(operands),
            [Value(t) for t in result_types],
            dict(attrs or {}),
            list(regions),
            self.loc,
        )
        self.block.ops.append(op)
        return op

    # -- constants and grid ----------------------------------------------------------------

    def constant(self, value: Any, type: TileType) -> Value:
        arr = np.asarray(value, dtype=_host_dtype(type.dtype))
        if arr.size != 1 and arr.shape != type.shape:
            raise ValueError(f"constant of shape {arr.shape} for {type}")
        return self.op("constant", [], [type], {"value": Dense(arr)}).result

    def scalar_const(self, value: int | float | bool, dtype: DType) -> Value:
        return self.constant(value, scalar(dtype))

    def block_ids(self) -> tuple[Value, Value, Value]:
        r = self.op("get_tile_block_id", [], [scalar(dt.i32)] * 3).results
        return r[0], r[1], r[2]

    def num_blocks(self) -> tuple[Value, Value, Value]:
        r = self.op("get_num_tile_blocks", [], [scalar(dt.i32)] * 3).results
        return r[0], r[1], r[2]

    def assume(self, value: Value, predicate: AssumePredicate) -> Value:
        return self.op("assume", [value], [value.type], {"predicate": predicate}).result

    # -- memory ----------------------------------------------------------------------------

    def make_token(self) -> Value:
        return self.op("make_token", [], [TOKEN]).result

    def join_tokens(self, tokens: Sequence[Value]) -> Value:
        if len(tokens) == 1:
            return tokens[0]
        return self.op("join_tokens", list(tokens), [TOKEN]).result

    def make_tensor_view(
        self,
        base: Value,
        shape: Sequence[Value | int],
        strides: Sequence[Value | int],
    ) -> Value:
        """Static ints go into the type; Values become the dynamic shape/stride operands."""
        assert isinstance(base.type, TileType) and isinstance(base.type.element, PointerType)
        elem = base.type.element.pointee
        ty = TensorViewType(
            elem,
            tuple(s if isinstance(s, int) else None for s in shape),
            tuple(s if isinstance(s, int) else None for s in strides),
        )
        dyn_shape = [s for s in shape if isinstance(s, Value)]
        dyn_strides = [s for s in strides if isinstance(s, Value)]
        op = self.op("make_tensor_view", [base, *dyn_shape, *dyn_strides], [ty])
        op.attrs["num_dynamic_shape"] = len(dyn_shape)
        return op.result

    def make_partition_view(
        self,
        tensor_view: Value,
        tile_shape: Sequence[int],
        dim_map: Sequence[int] | None = None,
        padding: str | None = None,
    ) -> Value:
        tv = tensor_view.type
        assert isinstance(tv, TensorViewType)
        ty = PartitionViewType(
            tuple(tile_shape),
            tv,
            tuple(dim_map) if dim_map is not None else tuple(range(tv.rank)),
            padding,
        )
        return self.op("make_partition_view", [tensor_view], [ty]).result

    def load_view(
        self, view: Value, index: Sequence[Value], token: Value | None, **attrs: Any
    ) -> tuple[Value, Value]:
        pv = view.type
        assert isinstance(pv, PartitionViewType)
        tile_ty = TileType(pv.tile_shape, pv.tensor_view.element)
        operands = [view, *index] + ([token] if token is not None else [])
        a = {"memory_ordering_semantics": "weak", "has_token": token is not None, **attrs}
        op = self.op("load_view_tko", operands, [tile_ty, TOKEN], a)
        return op.results[0], op.results[1]

    def store_view(
        self, tile: Value, view: Value, index: Sequence[Value], token: Value | None, **attrs: Any
    ) -> Value:
        operands = [tile, view, *index] + ([token] if token is not None else [])
        a = {"memory_ordering_semantics": "weak", "has_token": token is not None, **attrs}
        return self.op("store_view_tko", operands, [TOKEN], a).result

    # -- arithmetic ------------------------------------------------------------------------

    def binary(self, name: str, lhs: Value, rhs: Value, **attrs: Any) -> Value:
        if lhs.type != rhs.type:
            raise TypeError(f"`{name}` operands differ: {lhs.type} vs {rhs.type}")
        if name in FLOAT_BINARY:
            attrs.setdefault("rounding_mode", "nearest_even")
            attrs.setdefault("flush_to_zero", False)
        elif name in ("addi", "subi", "muli", "shli"):
            attrs.setdefault("overflow", "none")
        return self.op(name, [lhs, rhs], [lhs.type], attrs).result

    def unary(self, name: str, source: Value, **attrs: Any) -> Value:
        return self.op(name, [source], [source.type], attrs).result

    def cmp(self, name: str, predicate: str, lhs: Value, rhs: Value, **attrs: Any) -> Value:
        assert isinstance(lhs.type, TileType)
        a: dict[str, Any] = {"comparison_predicate": predicate, **attrs}
        if name == "cmpf":
            a.setdefault("comparison_ordering", "ordered")
        else:
            a.setdefault("signedness", "signed")
        return self.op(name, [lhs, rhs], [TileType(lhs.type.shape, dt.bool_)], a).result

    def select(self, cond: Value, if_true: Value, if_false: Value) -> Value:
        return self.op("select", [cond, if_true, if_false], [if_true.type]).result

    def convert(self, name: str, source: Value, to: DType, **attrs: Any) -> Value:
        assert isinstance(source.type, TileType)
        return self.op(name, [source], [TileType(source.type.shape, to)], attrs).result

    # -- shape -----------------------------------------------------------------------------

    def reshape(self, source: Value, shape: Sequence[int]) -> Value:
        assert isinstance(source.type, TileType)
        if tuple(shape) == source.type.shape:
            return source
        return self.op("reshape", [source], [TileType(tuple(shape), source.type.element)]).result

    def broadcast(self, source: Value, shape: Sequence[int]) -> Value:
        assert isinstance(source.type, TileType)
        if tuple(shape) == source.type.shape:
            return source
        ty = TileType(tuple(shape), source.type.element)
        return self.op("broadcast", [source], [ty]).result

    def permute(self, source: Value, permutation: Sequence[int]) -> Value:
        assert isinstance(source.type, TileType)
        shape = tuple(source.type.shape[p] for p in permutation)
        ty = TileType(shape, source.type.element)
        return self.op("permute", [source], [ty], {"permutation": tuple(permutation)}).result

    def iota(self, n: int, dtype: DType) -> Value:
        return self.op("iota", [], [TileType((n,), dtype)]).result

    # -- control flow ----------------------------------------------------------------------

    def return_(self, values: Sequence[Value] = ()) -> None:
        self.op("return", list(values), [])


def _host_dtype(d: DType) -> Any:
    if d.name == "bf16" or d.name == "tf32":
        return np.float32  # stored as f32 on the host; the encoder narrows
    return d.numpy
