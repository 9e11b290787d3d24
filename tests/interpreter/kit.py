"""Helpers to build small Tile IR kernels by hand for the interpreter tests.

Region ops (for, if, loop, reduce, scan) are built from raw `Op`/`Block` objects so the
tests depend only on the IR data model, not on builder conveniences."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from cutile import dtypes as dt
from cutile.dtypes import DType
from cutile.ir import Block, Builder, Location, Op, PointerType, TileType, Value, scalar
from cutile.ir.types import TOKEN, Type

LOC = Location("kernel.py", 42, 8, "kernel")


def ptr(d: DType) -> TileType:
    return TileType((), PointerType(d))


def new_kernel(params: Sequence[Type], name: str = "k") -> tuple[Builder, list[Value]]:
    b = Builder()
    fn = b.entry(name, params, loc=LOC)
    b.loc = LOC
    return b, fn.params


def const(b: Builder, value: Any, d: DType, shape: tuple[int, ...] = ()) -> Value:
    return b.constant(value, TileType(shape, d))


def i32(b: Builder, v: int) -> Value:
    return b.scalar_const(v, dt.i32)


def view(
    b: Builder,
    base: Value,
    shape: Sequence[Value | int],
    strides: Sequence[Value | int],
    tile: Sequence[int],
    dim_map: Sequence[int] | None = None,
    padding: str | None = None,
) -> Value:
    tv = b.make_tensor_view(base, shape, strides)
    return b.make_partition_view(tv, tile, dim_map, padding)


def load(b: Builder, pv: Value, index: Sequence[Value]) -> Value:
    return b.load_view(pv, index, None)[0]


def store(b: Builder, tile: Value, pv: Value, index: Sequence[Value]) -> None:
    b.store_view(tile, pv, index, None)


def splat(b: Builder, v: Value, shape: tuple[int, ...]) -> Value:
    """A rank-0 tile broadcast to `shape`."""
    r = b.reshape(v, (1,) * len(shape))
    return b.broadcast(r, shape)


# -- region ops from raw Op/Block -----------------------------------------------------------


def _region_op(
    b: Builder,
    name: str,
    operands: Sequence[Value],
    result_types: Sequence[Type],
    regions: Sequence[Block],
    attrs: dict[str, Any] | None = None,
) -> Op:
    assert b.block is not None
    op = Op(
        name,
        list(operands),
        [Value(t) for t in result_types],
        dict(attrs or {}),
        list(regions),
        b.loc,
    )
    b.block.ops.append(op)
    return op


def term(b: Builder, name: str, values: Sequence[Value] = ()) -> None:
    assert b.block is not None
    b.block.ops.append(Op(name, list(values), [], {}, [], b.loc))


@contextmanager
def for_loop(
    b: Builder,
    lb: Value,
    ub: Value,
    step: Value,
    init: Sequence[Value] = (),
    **attrs: Any,
) -> Iterator[tuple[Value, list[Value], Op]]:
    """Yields (iv, carried values, op); the body must end with `term(b, "continue", ...)`."""
    body = Block(args=[Value(lb.type, "iv"), *(Value(v.type) for v in init)])
    op = _region_op(b, "for", [lb, ub, step, *init], [v.type for v in init], [body], attrs)
    with b.at(body):
        yield body.args[0], body.args[1:], op


@contextmanager
def loop(
    b: Builder, init: Sequence[Value], result_types: Sequence[Type]
) -> Iterator[tuple[list[Value], Op]]:
    body = Block(args=[Value(v.type) for v in init])
    op = _region_op(b, "loop", list(init), result_types, [body])
    with b.at(body):
        yield body.args, op


def if_op(b: Builder, cond: Value, result_types: Sequence[Type] = ()) -> tuple[Op, Block, Block]:
    then, other = Block(), Block()
    op = _region_op(b, "if", [cond], result_types, [then, other])
    return op, then, other


@contextmanager
def reduction(
    b: Builder,
    name: str,
    operands: Sequence[Value],
    dim: int,
    identities: Sequence[Any],
    **attrs: Any,
) -> Iterator[tuple[list[Value], Op]]:
    """Body args are (elem, acc) per operand; end the body with `term(b, "yield", ...)`."""
    result_types: list[Type] = []
    args: list[Value] = []
    for v in operands:
        assert isinstance(v.type, TileType)
        shape = v.type.shape
        out = shape[:dim] + shape[dim + 1 :] if name == "reduce" else shape
        result_types.append(TileType(out, v.type.element))
        args += [Value(scalar(v.type.dtype)), Value(scalar(v.type.dtype))]
    body = Block(args=args)
    a = {"dim": dim, "identities": tuple(identities), **attrs}
    op = _region_op(b, name, operands, result_types, [body], a)
    with b.at(body):
        yield args, op


def raw(
    b: Builder, name: str, operands: Sequence[Value], result_types: Sequence[Type], **attrs: Any
) -> Op:
    return b.op(name, list(operands), list(result_types), attrs)


# -- ops the first builder did not have, built with `Builder.op` -----------------------------


def offset(b: Builder, p: Value, off: Value) -> Value:
    return raw(b, "offset", [p, off], [p.type]).result


def ptr_tile(b: Builder, base: Value, idx: Value) -> Value:
    """base + idx for a 1-D index tile: a tile of pointers."""
    assert isinstance(idx.type, TileType)
    return offset(b, splat(b, base, idx.type.shape), idx)


def load_ptr(b: Builder, p: Value, mask: Value | None = None, pad: Value | None = None) -> Value:
    assert isinstance(p.type, TileType) and isinstance(p.type.element, PointerType)
    ty = TileType(p.type.shape, p.type.element.pointee)
    ops = [p] + [v for v in (mask, pad) if v is not None]
    return raw(
        b,
        "load_ptr_tko",
        ops,
        [ty, TOKEN],
        memory_ordering_semantics="weak",
        has_mask=mask is not None,
        has_padding_value=pad is not None,
        has_token=False,
    ).results[0]


def store_ptr(b: Builder, p: Value, v: Value, mask: Value | None = None) -> None:
    ops = [p, v] + ([mask] if mask is not None else [])
    raw(
        b,
        "store_ptr_tko",
        ops,
        [TOKEN],
        memory_ordering_semantics="weak",
        has_mask=mask is not None,
        has_token=False,
    )


def atomic_rmw(b: Builder, p: Value, arg: Value, mode: str, mask: Value | None = None) -> Value:
    ops = [p, arg] + ([mask] if mask is not None else [])
    return raw(
        b,
        "atomic_rmw_tko",
        ops,
        [arg.type, TOKEN],
        mode=mode,
        memory_ordering_semantics="relaxed",
        memory_scope="device",
        has_mask=mask is not None,
        has_token=False,
    ).results[0]


def atomic_cas(b: Builder, p: Value, cmp: Value, val: Value, mask: Value | None = None) -> Value:
    ops = [p, cmp, val] + ([mask] if mask is not None else [])
    return raw(
        b,
        "atomic_cas_tko",
        ops,
        [val.type, TOKEN],
        memory_ordering_semantics="relaxed",
        memory_scope="device",
        has_mask=mask is not None,
        has_token=False,
    ).results[0]


def mmaf(b: Builder, lhs: Value, rhs: Value, acc: Value) -> Value:
    return raw(b, "mmaf", [lhs, rhs, acc], [acc.type]).result


def assert_(b: Builder, cond: Value, message: str) -> None:
    raw(b, "assert", [cond], [], message=message)


# -- buffers -------------------------------------------------------------------------------

POISON_BYTE = 0xCD


def poisoned(nbytes: int) -> np.ndarray:
    return np.full(nbytes, POISON_BYTE, dtype=np.uint8)


__all__ = ["TOKEN", "dt"]


def elementwise(
    build: Any,
    inputs: Sequence[tuple[np.ndarray, DType]],
    out: DType | Sequence[DType],
) -> Any:
    """Run `build(b, [loaded tiles]) -> Value | list[Value]` on 1-D inputs (given in their
    memory representation: bf16 as uint16 bits, i1 as bool) and return the stored results
    in memory representation."""
    outs = [out] if isinstance(out, DType) else list(out)
    n = len(inputs[0][0])
    params = [ptr(d) for _, d in inputs] + [ptr(d) for d in outs]
    b, ps = new_kernel(params, "ew")
    c0 = i32(b, 0)
    tiles = [load(b, view(b, p, [n], [1], [n]), [c0]) for p in ps[: len(inputs)]]
    res = build(b, tiles)
    res_list = res if isinstance(res, list) else [res]
    for r, p in zip(res_list, ps[len(inputs) :], strict=True):
        store(b, r, view(b, p, [n], [1], [n]), [c0])
    bufs = [np.ascontiguousarray(a) for a, _ in inputs]
    out_bufs = [np.zeros(n, dtype=_host(d)) for d in outs]
    from cutile.interpreter import Pointer, run

    run(b.module, "ew", (1, 1, 1), [Pointer.to(x) for x in [*bufs, *out_bufs]])
    return out_bufs[0] if isinstance(out, DType) else out_bufs


def _host(d: DType) -> Any:
    return {"bf16": np.uint16, "i1": np.bool_, "tf32": np.float32}.get(d.name, d.numpy_name)
