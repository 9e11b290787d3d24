"""Tokens, views and memory access (view-based and pointer-based), atomics."""

from __future__ import annotations

from collections.abc import Sequence

from ....ir.core import Op, Value
from ..opwriter import OpWriter, encodes
from ..version import V13_4


def split_optional(
    op: Op, fixed: int, markers: Sequence[str]
) -> tuple[list[Value], list[Value | None]]:
    """Split `op.operands` into its `fixed` leading operands and the optional trailing ones,
    whose presence the `has_*` marker attributes record (in ODS order)."""
    head = list(op.operands[:fixed])
    rest = list(op.operands[fixed:])
    present = [bool(op.attrs.get(m, False)) for m in markers]
    if len(rest) != sum(present):
        raise ValueError(
            f"{len(rest)} optional operands but markers {dict(zip(markers, present, strict=True))}"
        )
    it = iter(rest)
    return head, [next(it) if p else None for p in present]


def _view_index_and_token(op: Op, leading: int) -> tuple[list[Value], list[Value], Value | None]:
    has_token = bool(op.attrs.get("has_token", False))
    end = len(op.operands) - (1 if has_token else 0)
    head = list(op.operands[:leading])
    index = list(op.operands[leading:end])
    token = op.operands[end] if has_token else None
    return head, index, token


def _inbounds(w: OpWriter, op: Op, n_index: int) -> None:
    """`inbounds` (13.4+): one bool per index asserting that coordinate is in bounds."""
    flags = [bool(b) for b in op.attrs.get("inbounds", (False,) * n_index)]
    if len(flags) != n_index:
        raise ValueError(f"`inbounds` has {len(flags)} entries for {n_index} indices")
    if w.version >= V13_4:
        w.bool_array(flags)
    elif any(flags):
        raise ValueError("`inbounds` needs bytecode 13.4+")


def _present(op: Op, name: str) -> bool:
    return op.attrs.get(name) is not None


def _memory_attrs(w: OpWriter, op: Op) -> None:
    """ordering, then the optional scope and hints whose presence the flags announced."""
    w.enum(op, "memory_ordering_semantics", "weak")
    if _present(op, "memory_scope"):
        w.enum(op, "memory_scope")
    if _present(op, "optimization_hints"):
        w.hints(op.attrs["optimization_hints"])


@encodes("make_token")
def encode_make_token(w: OpWriter, op: Op) -> None:
    w.result(op)


@encodes("join_tokens")
def encode_join_tokens(w: OpWriter, op: Op) -> None:
    w.sized_results(op)
    w.sized_operands(op.operands)


@encodes("make_tensor_view")
def encode_make_tensor_view(w: OpWriter, op: Op) -> None:
    n_shape = int(w.attr(op, "num_dynamic_shape"))
    base, rest = op.operands[0], op.operands[1:]
    w.sized_results(op)
    w.operand(base)
    w.sized_operands(rest[:n_shape])
    w.sized_operands(rest[n_shape:])


@encodes("make_partition_view")
def encode_make_partition_view(w: OpWriter, op: Op) -> None:
    w.result(op)
    w.operands(op.operands)


@encodes("get_index_space_shape")
def encode_get_index_space_shape(w: OpWriter, op: Op) -> None:
    w.sized_results(op)
    w.operands(op.operands)


@encodes("get_tensor_shape")
def encode_get_tensor_shape(w: OpWriter, op: Op) -> None:
    w.sized_results(op)
    w.operands(op.operands)


@encodes("load_view_tko")
def encode_load_view_tko(w: OpWriter, op: Op) -> None:
    (view,), index, token = _view_index_and_token(op, 1)
    w.sized_results(op)
    w.flags(_present(op, "memory_scope"), _present(op, "optimization_hints"), token is not None)
    _memory_attrs(w, op)
    _inbounds(w, op, len(index))
    w.operand(view)
    w.sized_operands(index)
    if token is not None:
        w.operand(token)


@encodes("store_view_tko")
def encode_store_view_tko(w: OpWriter, op: Op) -> None:
    (tile, view), index, token = _view_index_and_token(op, 2)
    w.sized_results(op)
    w.flags(_present(op, "memory_scope"), _present(op, "optimization_hints"), token is not None)
    _memory_attrs(w, op)
    _inbounds(w, op, len(index))
    w.operands([tile, view])
    w.sized_operands(index)
    if token is not None:
        w.operand(token)


@encodes("load_ptr_tko")
def encode_load_ptr_tko(w: OpWriter, op: Op) -> None:
    (source,), (mask, padding, token) = split_optional(
        op, 1, ("has_mask", "has_padding_value", "has_token")
    )
    w.fixed_results(op, 2)
    w.flags(
        _present(op, "memory_scope"),
        _present(op, "optimization_hints"),
        mask is not None,
        padding is not None,
        token is not None,
    )
    _memory_attrs(w, op)
    w.operand(source)
    w.operands([v for v in (mask, padding, token) if v is not None])


@encodes("store_ptr_tko")
def encode_store_ptr_tko(w: OpWriter, op: Op) -> None:
    (dest, value), (mask, token) = split_optional(op, 2, ("has_mask", "has_token"))
    w.result(op)
    w.flags(
        _present(op, "memory_scope"),
        _present(op, "optimization_hints"),
        mask is not None,
        token is not None,
    )
    _memory_attrs(w, op)
    w.operands([dest, value])
    w.operands([v for v in (mask, token) if v is not None])


@encodes("atomic_rmw_tko")
def encode_atomic_rmw_tko(w: OpWriter, op: Op) -> None:
    (pointers, arg), (mask, token) = split_optional(op, 2, ("has_mask", "has_token"))
    w.fixed_results(op, 2)
    w.flags(mask is not None, token is not None)
    w.enum(op, "memory_ordering_semantics")
    w.enum(op, "memory_scope")
    w.enum(op, "mode")
    w.operands([pointers, arg])
    w.operands([v for v in (mask, token) if v is not None])


@encodes("atomic_cas_tko")
def encode_atomic_cas_tko(w: OpWriter, op: Op) -> None:
    (pointers, cmp, val), (mask, token) = split_optional(op, 3, ("has_mask", "has_token"))
    w.fixed_results(op, 2)
    w.flags(mask is not None, token is not None)
    w.enum(op, "memory_ordering_semantics")
    w.enum(op, "memory_scope")
    w.operands([pointers, cmp, val])
    w.operands([v for v in (mask, token) if v is not None])


@encodes("offset")
def encode_offset(w: OpWriter, op: Op) -> None:
    w.result(op)
    w.operands(op.operands)


def _encode_gdc(w: OpWriter, op: Op) -> None:
    """The two grid-dependency ops (13.4): the result token, a flags varint whose bit 0
    says the optional token operand is there, then that operand."""
    token = op.operands[0] if w.has(op, "has_token") else None
    if len(op.operands) != (1 if token is not None else 0):
        raise ValueError(f"{len(op.operands)} operands but has_token={token is not None}")
    w.result(op)
    w.flags(token is not None)
    if token is not None:
        w.operand(token)


@encodes("gdc_wait_tko")
def encode_gdc_wait_tko(w: OpWriter, op: Op) -> None:
    _encode_gdc(w, op)


@encodes("gdc_launch_dependents_tko")
def encode_gdc_launch_dependents_tko(w: OpWriter, op: Op) -> None:
    _encode_gdc(w, op)
