"""Builds Tile IR ops with their result types worked out.

Attribute names follow `Ops.td`; enum-valued attributes are plain strings spelled as in the
textual form (`"nearest_even"`, `"signed"`, `"less_than"`, `"weak"`).
"""

from __future__ import annotations

import contextlib
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

    def entry(
        self, name: str, param_types: Sequence[Type], loc: Location | None = None
    ) -> Function:
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

    def gdc_wait(self, token: Value | None = None) -> Value:
        """`gdc_wait_tko`: wait until the prerequisite grid completed and its writes are
        visible (programmatic dependent launch; `lowering/pdl.py`)."""
        return self._gdc("gdc_wait_tko", token)

    def gdc_launch_dependents(self, token: Value | None = None) -> Value:
        """`gdc_launch_dependents_tko`: the dependent grid may be scheduled once every
        block of this one issued it (no memory ordering of its own)."""
        return self._gdc("gdc_launch_dependents_tko", token)

    def _gdc(self, name: str, token: Value | None) -> Value:
        operands = [] if token is None else [token]
        return self.op(name, operands, [TOKEN], {"has_token": token is not None}).result

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
        else:  # an unsigned type compares unsigned unless told otherwise
            unsigned = isinstance(lhs.type.element, DType) and lhs.type.element.unsigned
            a.setdefault("signedness", "unsigned" if unsigned else "signed")
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

    def yield_(self, values: Sequence[Value] = ()) -> None:
        self.op("yield", list(values), [])

    def continue_(self, values: Sequence[Value] = ()) -> None:
        self.op("continue", list(values), [])

    def break_(self, values: Sequence[Value] = ()) -> None:
        self.op("break", list(values), [])

    @contextmanager
    def for_(
        self,
        lower: Value,
        upper: Value,
        step: Value,
        init: Sequence[Value] = (),
        unsigned_cmp: bool = False,
    ) -> Iterator[RegionOp]:
        """`for %iv in (lower to upper, step step) iter_values(init)`: the body's arguments
        are the induction variable then the loop-carried values; end it with `continue_`
        (added for you when nothing is carried)."""
        body = Block(args=[Value(lower.type, "iv"), *(Value(v.type) for v in init)])
        attrs: dict[str, Any] = {"unsignedCmp": True} if unsigned_cmp else {}
        op = self.op("for", [lower, upper, step, *init], [v.type for v in init], attrs, [body])
        with self.at(body):
            yield RegionOp(op)
            if not init and not _terminated(body):
                self.continue_()

    @contextmanager
    def if_(self, condition: Value, result_types: Sequence[Type] = ()) -> Iterator[IfOp]:
        """`if cond -> (types) {then} else {else}`; fill the branches with
        `with branch.then_():` / `with branch.else_():`. Branches without results get their
        `yield` added for you."""
        op = self.op("if", [condition], list(result_types), {}, [Block(), Block()])
        yield IfOp(self, op)
        if not result_types:
            for region in op.regions:
                if not _terminated(region):
                    with self.at(region):
                        self.yield_()

    @contextmanager
    def loop(
        self, init: Sequence[Value] = (), result_types: Sequence[Type] = ()
    ) -> Iterator[RegionOp]:
        """`loop iter_values(init) -> (result_types)`: runs until a `break_` (whose operands
        are the results); `continue_` passes new carried values to the next iteration."""
        body = Block(args=[Value(v.type) for v in init])
        op = self.op("loop", list(init), list(result_types), {}, [body])
        with self.at(body):
            yield RegionOp(op)

    def reduce(
        self, operands: Sequence[Value], dim: int, identities: Sequence[int | float | bool]
    ) -> contextlib.AbstractContextManager[RegionOp]:
        """Reduce each operand along `dim` (removed from the result shape). The body gets
        (element, accumulator) rank-0 pairs per operand and `yield_`s the new accumulators."""
        return self._reduction("reduce", operands, dim, identities, {})

    def scan(
        self,
        operands: Sequence[Value],
        dim: int,
        identities: Sequence[int | float | bool],
        reverse: bool = False,
    ) -> contextlib.AbstractContextManager[RegionOp]:
        """Inclusive prefix scan along `dim`; the body is as for `reduce`."""
        return self._reduction("scan", operands, dim, identities, {"reverse": reverse})

    @contextmanager
    def _reduction(
        self,
        name: str,
        operands: Sequence[Value],
        dim: int,
        identities: Sequence[int | float | bool],
        attrs: dict[str, Any],
    ) -> Iterator[RegionOp]:
        result_types: list[Type] = []
        args: list[Value] = []
        for v in operands:
            assert isinstance(v.type, TileType)
            shape = v.type.shape
            out_shape = shape[:dim] + shape[dim + 1 :] if name == "reduce" else shape
            result_types.append(TileType(out_shape, v.type.element))
            args += [Value(scalar(v.type.dtype)), Value(scalar(v.type.dtype))]
        body = Block(args=args)
        a = {"dim": dim, "identities": tuple(identities), **attrs}
        op = self.op(name, list(operands), result_types, a, [body])
        with self.at(body):
            yield RegionOp(op)

    # -- more arithmetic and shape ops -----------------------------------------------------

    def fma(self, lhs: Value, rhs: Value, acc: Value, **attrs: Any) -> Value:
        attrs.setdefault("rounding_mode", "nearest_even")
        attrs.setdefault("flush_to_zero", False)
        return self.op("fma", [lhs, rhs, acc], [acc.type], attrs).result

    def mmaf(self, lhs: Value, rhs: Value, acc: Value, fast_acc: bool = False) -> Value:
        """acc + lhs @ rhs (2-D, or batched 3-D) with a float accumulator."""
        attrs: dict[str, Any] = {"fast_acc": True} if fast_acc else {}
        return self.op("mmaf", [lhs, rhs, acc], [acc.type], attrs).result

    def mmai(
        self,
        lhs: Value,
        rhs: Value,
        acc: Value,
        signedness_lhs: str = "signed",
        signedness_rhs: str = "signed",
    ) -> Value:
        attrs = {"signedness_lhs": signedness_lhs, "signedness_rhs": signedness_rhs}
        return self.op("mmai", [lhs, rhs, acc], [acc.type], attrs).result

    def cat(self, lhs: Value, rhs: Value, dim: int) -> Value:
        assert isinstance(lhs.type, TileType) and isinstance(rhs.type, TileType)
        shape = list(lhs.type.shape)
        shape[dim] += rhs.type.shape[dim]
        ty = TileType(tuple(shape), lhs.type.element)
        return self.op("cat", [lhs, rhs], [ty], {"dim": dim}).result

    def extract(self, source: Value, indices: Sequence[Value], shape: Sequence[int]) -> Value:
        """The `indices`-th slice of shape `shape` (indices count slices, not elements)."""
        assert isinstance(source.type, TileType)
        ty = TileType(tuple(shape), source.type.element)
        return self.op("extract", [source, *indices], [ty]).result

    def get_index_space_shape(self, view: Value, dtype: DType = dt.i32) -> list[Value]:
        """Number of tiles along each dimension of a partition view."""
        pv = view.type
        assert isinstance(pv, PartitionViewType)
        n = len(pv.tile_shape)
        return self.op("get_index_space_shape", [view], [scalar(dtype)] * n).results

    def get_tensor_shape(self, view: Value, dtype: DType = dt.i32) -> list[Value]:
        tv = view.type
        assert isinstance(tv, TensorViewType)
        return self.op("get_tensor_shape", [view], [scalar(dtype)] * tv.rank).results

    # -- assertions and printing -----------------------------------------------------------

    def assert_(self, condition: Value, message: str) -> None:
        self.op("assert", [condition], [], {"message": message})

    def print_(self, fmt: str, args: Sequence[Value] = (), token: Value | None = None) -> Value:
        """`print_tko`: printf-style `fmt` over tile arguments; returns its token."""
        operands = [*args] + ([token] if token is not None else [])
        attrs = {"str": fmt, "has_token": token is not None}
        return self.op("print_tko", operands, [TOKEN], attrs).result

    # -- pointers --------------------------------------------------------------------------

    def offset(self, ptr: Value, offset: Value) -> Value:
        """Advance each pointer by `offset` elements."""
        return self.op("offset", [ptr, offset], [ptr.type]).result

    def int_to_ptr(self, source: Value, pointee: DType) -> Value:
        assert isinstance(source.type, TileType)
        ty = TileType(source.type.shape, PointerType(pointee))
        return self.op("int_to_ptr", [source], [ty]).result

    def ptr_to_int(self, source: Value) -> Value:
        assert isinstance(source.type, TileType)
        return self.op("ptr_to_int", [source], [TileType(source.type.shape, dt.i64)]).result

    def load_ptr(
        self,
        ptrs: Value,
        mask: Value | None = None,
        padding: Value | None = None,
        token: Value | None = None,
        **attrs: Any,
    ) -> tuple[Value, Value]:
        """`load_ptr_tko`: gather through a tile of pointers; masked-off lanes read
        `padding`."""
        pt = ptrs.type
        assert isinstance(pt, TileType) and isinstance(pt.element, PointerType)
        ty = TileType(pt.shape, pt.element.pointee)
        operands = [ptrs] + [v for v in (mask, padding, token) if v is not None]
        a = {
            "memory_ordering_semantics": "weak",
            "has_mask": mask is not None,
            "has_padding_value": padding is not None,
            "has_token": token is not None,
            **attrs,
        }
        op = self.op("load_ptr_tko", operands, [ty, TOKEN], a)
        return op.results[0], op.results[1]

    def store_ptr(
        self,
        ptrs: Value,
        value: Value,
        mask: Value | None = None,
        token: Value | None = None,
        **attrs: Any,
    ) -> Value:
        """`store_ptr_tko`: scatter through a tile of pointers; returns the token."""
        operands = [ptrs, value] + [v for v in (mask, token) if v is not None]
        a = {
            "memory_ordering_semantics": "weak",
            "has_mask": mask is not None,
            "has_token": token is not None,
            **attrs,
        }
        return self.op("store_ptr_tko", operands, [TOKEN], a).result

    def atomic_rmw(
        self,
        ptrs: Value,
        arg: Value,
        mode: str,
        mask: Value | None = None,
        token: Value | None = None,
        memory_ordering_semantics: str = "relaxed",
        memory_scope: str = "device",
    ) -> tuple[Value, Value]:
        """`atomic_rmw_tko` (`mode`: add, addf, max, min, umax, umin, and, or, xor, xchg);
        returns (old values, token)."""
        operands = [ptrs, arg] + [v for v in (mask, token) if v is not None]
        a = {
            "mode": mode,
            "memory_ordering_semantics": memory_ordering_semantics,
            "memory_scope": memory_scope,
            "has_mask": mask is not None,
            "has_token": token is not None,
        }
        op = self.op("atomic_rmw_tko", operands, [arg.type, TOKEN], a)
        return op.results[0], op.results[1]

    def atomic_cas(
        self,
        ptrs: Value,
        cmp: Value,
        val: Value,
        mask: Value | None = None,
        token: Value | None = None,
        memory_ordering_semantics: str = "relaxed",
        memory_scope: str = "device",
    ) -> tuple[Value, Value]:
        """`atomic_cas_tko`: where *ptr == cmp store val; returns (old values, token)."""
        operands = [ptrs, cmp, val] + [v for v in (mask, token) if v is not None]
        a = {
            "memory_ordering_semantics": memory_ordering_semantics,
            "memory_scope": memory_scope,
            "has_mask": mask is not None,
            "has_token": token is not None,
        }
        op = self.op("atomic_cas_tko", operands, [val.type, TOKEN], a)
        return op.results[0], op.results[1]


TERMINATORS = frozenset({"yield", "continue", "break", "return"})


def _terminated(block: Block) -> bool:
    return bool(block.ops) and block.ops[-1].name in TERMINATORS


class RegionOp:
    """A region-carrying op under construction: its body arguments and its results."""

    def __init__(self, op: Op) -> None:
        self.op = op

    @property
    def args(self) -> list[Value]:
        return self.op.regions[0].args

    @property
    def iv(self) -> Value:
        """The induction variable of a `for`."""
        return self.args[0]

    @property
    def iter_args(self) -> list[Value]:
        """The loop-carried values inside the body (after the induction variable of a
        `for`)."""
        return self.args[1:] if self.op.name == "for" else self.args

    @property
    def results(self) -> list[Value]:
        return self.op.results


class IfOp:
    """The two branches of an `if` under construction."""

    def __init__(self, builder: Builder, op: Op) -> None:
        self.builder = builder
        self.op = op

    def then_(self) -> contextlib.AbstractContextManager[Block]:
        return self.builder.at(self.op.regions[0])

    def else_(self) -> contextlib.AbstractContextManager[Block]:
        return self.builder.at(self.op.regions[1])

    @property
    def results(self) -> list[Value]:
        return self.op.results


def _host_dtype(d: DType) -> Any:
    if d.name == "bf16" or d.name == "tf32":
        return np.float32  # stored as f32 on the host; the encoder narrows
    if d.is_f8:
        return np.float64  # the encoder (and the interpreter) round and saturate
    return d.numpy
