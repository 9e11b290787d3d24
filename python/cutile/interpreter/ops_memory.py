"""Memory ops: tokens, tensor/partition views and their loads and stores, pointer tiles,
gathers, scatters and atomics.

Tokens carry no data: tile blocks run one at a time and ops in program order, so every
ordering a token could ask for already holds.

Every access is shown to the race detector first (`m.detector`, None when it is off), so a
reported access never changes memory.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..dtypes import DType
from ..errors import InterpreterError
from ..ir.core import Op
from ..ir.types import PartitionViewType, PointerType, TensorViewType, TileType, TokenType
from .memory import PartitionView, TensorView
from .race import ATOMIC, READ, WRITE
from .registry import handler
from .values import (
    Array,
    compute_float,
    float_bits,
    freeze,
    full,
    poison,
    to_float,
    unsigned,
    wrap_int,
)

if TYPE_CHECKING:
    from .machine import Machine


class Token:
    """The value of every `token`."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "token"


TOKEN = Token()


def _int_value(op: Op, i: int, value: Array) -> int:
    """Operand i (a scalar integer tile), read as unsigned as the view ops specify."""
    ty = op.operands[i].type
    assert isinstance(ty, TileType)
    return int(unsigned(np.asarray(value), ty.dtype))


def _split_token(op: Op, args: list[Any]) -> tuple[list[Any], list[int]]:
    """The operands that are not tokens, and their operand positions."""
    vals, pos = [], []
    for i, (v, a) in enumerate(zip(op.operands, args, strict=False)):
        if not isinstance(v.type, TokenType):
            vals.append(a)
            pos.append(i)
    return vals, pos


@handler("make_token", "join_tokens")
def _token(m: Machine, op: Op, args: list[Any]) -> list[Any]:
    return [TOKEN]


@handler("gdc_wait_tko", "gdc_launch_dependents_tko")
def _grid_dependency(m: Machine, op: Op, args: list[Any]) -> list[Any]:
    """Programmatic dependent launch: waiting for the previous kernel, and letting the next
    one start early. The interpreter runs kernels one after another, each to completion
    (`runtime/launch.interpret`), so the previous kernel has finished and its writes are
    visible before any op of this one runs, and there is no next kernel to start: both
    ops only pass a token on."""
    return [TOKEN]


# -- views ---------------------------------------------------------------------------------


@handler("make_tensor_view")
def _make_tensor_view(m: Machine, op: Op, args: list[Any]) -> list[Any]:
    ty = op.results[0].type
    assert isinstance(ty, TensorViewType)
    base, *dynamic = args
    n_shape = sum(1 for s in ty.shape if s is None)
    n_stride = sum(1 for s in ty.strides if s is None)
    if len(dynamic) != n_shape + n_stride:
        raise InterpreterError(
            f"{ty} needs {n_shape + n_stride} dynamic shape/stride operands, got {len(dynamic)}"
        )
    dyn = [_int_value(op, i + 1, v) for i, v in enumerate(dynamic)]
    shape_it, stride_it = iter(dyn[:n_shape]), iter(dyn[n_shape:])
    shape = tuple(next(shape_it) if s is None else s for s in ty.shape)
    strides = tuple(next(stride_it) if s is None else s for s in ty.strides)
    if len(strides) != len(shape):
        raise InterpreterError(f"{ty}: {len(shape)} dims but {len(strides)} strides")
    # Views are plain data over fixed buffers: most blocks build the same one, so reuse it.
    cache = m.cache.setdefault(op, {})
    key = (int(base), shape, strides)
    tv = cache.get(key)
    if tv is None:
        if len(cache) > 256:
            cache.clear()
        tv = cache[key] = TensorView.make(m.memory, int(base), ty.element, shape, strides)
    return [tv]


@handler("make_partition_view")
def _make_partition_view(m: Machine, op: Op, args: list[Any]) -> list[Any]:
    ty = op.results[0].type
    assert isinstance(ty, PartitionViewType)
    (tv,) = args
    cache = m.cache.setdefault(op, {})
    pv = cache.get(tv)
    if pv is None:
        if len(cache) > 256:
            cache.clear()
        pv = cache[tv] = PartitionView(tv, tuple(ty.tile_shape), tuple(ty.dim_map), ty.padding)
    return [pv]


def _view_and_index(op: Op, args: list[Any], first: int) -> tuple[PartitionView, list[int]]:
    vals, pos = _split_token(op, args)
    view = vals[first]
    if not isinstance(view, PartitionView):
        raise InterpreterError(f"`{op.name}` needs a partition_view, got {type(view).__name__}")
    index = [
        _int_value(op, p, v) for p, v in zip(pos[first + 1 :], vals[first + 1 :], strict=False)
    ]
    return view, index


@handler("load_view_tko")
def _load_view(m: Machine, op: Op, args: list[Any]) -> list[Any]:
    view, index = _view_and_index(op, args, 0)
    if m.detector is not None:
        m.detector.view_access(op, view, index, READ)
    return [freeze(view.load(index)), TOKEN]


@handler("store_view_tko")
def _store_view(m: Machine, op: Op, args: list[Any]) -> list[Any]:
    view, index = _view_and_index(op, args, 1)
    tile = args[0]
    if tuple(np.shape(tile)) != view.tile_shape:
        raise InterpreterError(f"storing a {np.shape(tile)} tile into {view.tile_shape} tiles")
    if m.detector is not None:
        m.detector.view_access(op, view, index, WRITE)
    view.store(index, tile)
    return [TOKEN]


def _shape_results(op: Op, dims: tuple[int, ...]) -> list[Any]:
    if len(dims) != len(op.results):
        raise InterpreterError(f"{len(op.results)} results for a rank-{len(dims)} shape")
    out = []
    for r, n in zip(op.results, dims, strict=False):
        assert isinstance(r.type, TileType)
        out.append(freeze(wrap_int(np.array(n, dtype=np.int64), r.type.dtype)))
    return out


@handler("get_tensor_shape")
def _tensor_shape(m: Machine, op: Op, args: list[Any]) -> list[Any]:
    (tv,) = args
    if not isinstance(tv, TensorView):
        raise InterpreterError("get_tensor_shape needs a tensor_view")
    return _shape_results(op, tv.shape)


@handler("get_index_space_shape")
def _index_space_shape(m: Machine, op: Op, args: list[Any]) -> list[Any]:
    (pv,) = args
    if not isinstance(pv, PartitionView):
        raise InterpreterError("get_index_space_shape needs a partition_view")
    return _shape_results(op, pv.index_space)


# -- pointer tiles ---------------------------------------------------------------------------


def _pointee(op: Op, i: int) -> DType:
    ty = op.operands[i].type
    assert isinstance(ty, TileType) and isinstance(ty.element, PointerType)
    return ty.element.pointee


@handler("offset")
def _offset(m: Machine, op: Op, args: list[Any]) -> list[Any]:
    ptr, off = args
    ty = op.operands[1].type
    assert isinstance(ty, TileType)
    steps = off.astype(np.int64) if ty.dtype.name != "i1" else -(off.astype(np.int64))
    return [freeze(np.asarray(ptr + steps * _pointee(op, 0).itemsize, dtype=np.int64))]


@handler("int_to_ptr", "ptr_to_int", "ptr_to_ptr")
def _ptr_cast(m: Machine, op: Op, args: list[Any]) -> list[Any]:
    # Pointers are int64 addresses already; int_to_ptr reads its i64 as unsigned bits,
    # which int64 storage holds unchanged.
    return [args[0]]


def _mask_and_padding(op: Op, args: list[Any], fixed: int) -> tuple[Any, Any]:
    """Optional trailing (mask, padding) operands after `fixed` leading ones."""
    vals, _ = _split_token(op, args)
    extra = vals[fixed:]
    seg = op.attrs.get("operandSegmentSizes", op.attrs.get("operand_segment_sizes"))
    has_mask = op.attrs.get("has_mask")
    has_pad = op.attrs.get("has_padding_value", op.attrs.get("has_padding"))
    if seg is not None and len(seg) >= fixed + 2:
        has_mask, has_pad = bool(seg[fixed]), bool(seg[fixed + 1])
    if has_mask is None and has_pad is None:
        has_mask, has_pad = len(extra) >= 1, len(extra) >= 2
    elif has_mask is None:
        has_mask = len(extra) - int(bool(has_pad)) > 0
    elif has_pad is None:
        has_pad = len(extra) - int(bool(has_mask)) > 0
    if int(bool(has_mask)) + int(bool(has_pad)) != len(extra):
        raise InterpreterError(f"`{op.name}` has {len(extra)} optional operands")
    mask = extra[0] if has_mask else None
    pad = extra[-1] if has_pad else None
    return mask, pad


@handler("load_ptr_tko")
def _load_ptr(m: Machine, op: Op, args: list[Any]) -> list[Any]:
    d = _pointee(op, 0)
    ptrs = args[0]
    mask, pad = _mask_and_padding(op, args, 1)
    if mask is None:
        if m.detector is not None:
            m.detector.pointer_access(op, ptrs, d.itemsize, READ)
        return [freeze(m.memory.read(ptrs, d)), TOKEN]
    mask = np.broadcast_to(mask, ptrs.shape)
    if m.detector is not None:
        m.detector.pointer_access(op, ptrs[mask], d.itemsize, READ)
    out = (
        np.array(np.broadcast_to(pad, ptrs.shape))
        if pad is not None
        else full(ptrs.shape, poison(d), d)
    )
    if mask.any():
        out[mask] = m.memory.read(ptrs[mask], d)
    return [freeze(out), TOKEN]


@handler("store_ptr_tko")
def _store_ptr(m: Machine, op: Op, args: list[Any]) -> list[Any]:
    d = _pointee(op, 0)
    ptrs, value = args[0], args[1]
    mask, _ = _mask_and_padding(op, args, 2)
    value = np.broadcast_to(value, ptrs.shape)
    if mask is None:
        if m.detector is not None:
            m.detector.pointer_access(op, ptrs, d.itemsize, WRITE)
        m.memory.write(ptrs.reshape(-1), value.reshape(-1), d)
    else:
        mask = np.broadcast_to(mask, ptrs.shape)
        if m.detector is not None:
            m.detector.pointer_access(op, ptrs[mask], d.itemsize, WRITE)
        m.memory.write(ptrs[mask], value[mask], d)
    return [TOKEN]


# -- atomics -----------------------------------------------------------------------------


def _in_rounds(addrs: Array) -> list[Array]:
    """Split element positions into rounds with distinct addresses, keeping each address's
    elements in order: one vectorized read-modify-write per round is then the same as
    doing the elements one after another."""
    rounds: list[Array] = []
    remaining = np.arange(addrs.size)
    while remaining.size:
        _, first = np.unique(addrs[remaining], return_index=True)
        first.sort()
        rounds.append(remaining[first])
        remaining = np.delete(remaining, first)
    return rounds


def _rmw(mode: str, d: DType, old: Array, arg: Array) -> Array:
    if mode == "addf":
        c = compute_float(d)
        return to_float(old.astype(c) + arg.astype(c), d)
    if mode == "xchg":
        return arg
    if not d.is_int:
        raise InterpreterError(f"atomic `{mode}` needs an integer type, not {d.name}")
    if mode == "add":
        return wrap_int(old.astype(np.int64) + arg.astype(np.int64), d)
    if mode in ("and", "or", "xor"):
        f = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[mode]
        return np.asarray(f(old, arg))
    if mode in ("max", "min"):
        return np.asarray(np.maximum(old, arg) if mode == "max" else np.minimum(old, arg))
    if mode in ("umax", "umin"):
        uo, ua = unsigned(old, d), unsigned(arg, d)
        pick = uo >= ua if mode == "umax" else uo <= ua
        return np.asarray(np.where(pick, old, arg))
    raise InterpreterError(f"unknown atomic mode `{mode}`")


@handler("atomic_rmw_tko")
def _atomic_rmw(m: Machine, op: Op, args: list[Any]) -> list[Any]:
    d = _pointee(op, 0)
    ptrs, arg = args[0], np.broadcast_to(args[1], args[0].shape)
    mask, _ = _mask_and_padding(op, args, 2)
    mode = str(op.attrs.get("mode", ""))
    active = np.ones(ptrs.shape, bool) if mask is None else np.broadcast_to(mask, ptrs.shape)
    addrs, vals = ptrs[active], arg[active]
    if m.detector is not None:
        m.detector.pointer_access(op, addrs, d.itemsize, ATOMIC)
    result = full(ptrs.shape, poison(d), d)  # masked-off results are unspecified
    old_all = np.empty(addrs.shape, dtype=result.dtype)
    for sel in _in_rounds(addrs):
        old = m.memory.read(addrs[sel], d)
        m.memory.write(addrs[sel], _rmw(mode, d, old, vals[sel]), d)
        old_all[sel] = old
    result[active] = old_all
    return [freeze(result), TOKEN]


def _same_bits(a: Array, b: Array, d: DType) -> Array:
    if d.is_float:
        return np.asarray(float_bits(a, d) == float_bits(b, d))
    return np.asarray(a == b)


@handler("atomic_cas_tko")
def _atomic_cas(m: Machine, op: Op, args: list[Any]) -> list[Any]:
    d = _pointee(op, 0)
    ptrs = args[0]
    cmp = np.broadcast_to(args[1], ptrs.shape)
    val = np.broadcast_to(args[2], ptrs.shape)
    mask, _ = _mask_and_padding(op, args, 3)
    active = np.ones(ptrs.shape, bool) if mask is None else np.broadcast_to(mask, ptrs.shape)
    addrs, c, v = ptrs[active], cmp[active], val[active]
    if m.detector is not None:
        m.detector.pointer_access(op, addrs, d.itemsize, ATOMIC)
    result = np.array(cmp)  # masked-off elements return cmp, as the spec says
    old_all = np.empty(addrs.shape, dtype=result.dtype)
    for sel in _in_rounds(addrs):
        old = m.memory.read(addrs[sel], d)
        hit = _same_bits(old, c[sel], d)
        if hit.any():
            m.memory.write(addrs[sel][hit], v[sel][hit], d)
        old_all[sel] = old
    result[active] = old_all
    return [freeze(result), TOKEN]
