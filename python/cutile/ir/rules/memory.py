"""Tokens, tensor and partition views, pointer loads/stores, atomics, offsets."""

from __future__ import annotations

from collections.abc import Sequence

from ..core import Op, Value
from ..types import PartitionViewType, PointerType, TensorViewType, TileType, TokenType, Type
from .base import counts, is_i1, is_kind, is_ptr_tile, is_scalar_int, rule, same_shape

# -- memory ----------------------------------------------------------------------------


@rule("make_token")
def _make_token(op: Op) -> list[str]:
    problems = counts(op, 0, 1)
    if op.results and not isinstance(op.results[0].type, TokenType):
        problems.append("result must be a token")
    return problems


@rule("join_tokens")
def _join_tokens(op: Op) -> list[str]:
    problems = counts(op, None, 1)
    if len(op.operands) < 2:
        problems.append("joins at least two tokens")
    if any(not isinstance(v.type, TokenType) for v in (*op.operands, *op.results)):
        problems.append("operands and result must be tokens")
    return problems


@rule("gdc_wait_tko", "gdc_launch_dependents_tko")
def _gdc(op: Op) -> list[str]:
    problems = counts(op, None, 1)
    has_token = bool(op.attrs.get("has_token", False))
    if len(op.operands) != (1 if has_token else 0):
        problems.append(f"has_token={has_token} but {len(op.operands)} operands")
    if any(not isinstance(v.type, TokenType) for v in (*op.operands, *op.results)):
        problems.append("operand and result must be tokens")
    return problems


@rule("make_tensor_view")
def _make_tensor_view(op: Op) -> list[str]:
    if len(op.results) != 1 or not isinstance(op.results[0].type, TensorViewType):
        return ["result must be a tensor_view"]
    tv = op.results[0].type
    problems = []
    base = op.operands[0].type if op.operands else None
    if not (
        isinstance(base, TileType) and base.shape == () and isinstance(base.element, PointerType)
    ):
        return [f"base must be a rank-0 pointer tile, got {base}"]
    if base.element.pointee != tv.element:
        problems.append(f"base points to {base.element.pointee}, view holds {tv.element}")
    n_shape = sum(d is None for d in tv.shape)
    n_strides = sum(s is None for s in tv.strides)
    if op.attrs.get("num_dynamic_shape") != n_shape or len(op.operands) != 1 + n_shape + n_strides:
        problems.append("dynamic shape/stride operands do not match the `?`s of the view type")
    if len(tv.shape) != len(tv.strides):
        problems.append("shape and strides differ in rank")
    if any(not is_scalar_int(v.type) for v in op.operands[1:]):
        problems.append("dynamic shapes and strides must be rank-0 integer tiles")
    return problems


@rule("make_partition_view")
def _make_partition_view(op: Op) -> list[str]:
    problems = counts(op, 1, 1)
    if problems:
        return problems
    pv, tv = op.results[0].type, op.operands[0].type
    if not isinstance(pv, PartitionViewType) or not isinstance(tv, TensorViewType):
        return ["makes a partition_view from a tensor_view"]
    if pv.tensor_view != tv:
        problems.append("result's tensor_view differs from the operand's")
    if len(pv.tile_shape) != tv.rank:
        problems.append(f"tile rank {len(pv.tile_shape)} for a rank-{tv.rank} tensor")
    if sorted(pv.dim_map) != list(range(tv.rank)):
        problems.append(f"`dim_map` {pv.dim_map} is not a permutation")
    if pv.padding not in (None, "zero") and not tv.element.is_float:
        problems.append(f"padding `{pv.padding}` needs float elements, not {tv.element}")
    return problems


def _view_index(op: Op, lead: int) -> tuple[Value | None, list[Value], Value | None, list[str]]:
    has_token = bool(op.attrs.get("has_token"))
    end = len(op.operands) - (1 if has_token else 0)
    if end < lead:
        return None, [], None, ["too few operands"]
    view = op.operands[lead - 1]
    index = list(op.operands[lead:end])
    token = op.operands[end] if has_token else None
    problems = []
    if token is not None and not isinstance(token.type, TokenType):
        problems.append("`has_token` set but the last operand is not a token")
    pv = view.type
    if not isinstance(pv, PartitionViewType):
        problems.append(f"view must be a partition_view, got {pv}")
    elif len(index) != len(pv.tile_shape):
        problems.append(f"{len(index)} indices for a rank-{len(pv.tile_shape)} view")
    if any(not is_scalar_int(i.type) for i in index):
        problems.append("indices must be rank-0 integer tiles")
    return view, index, token, problems


def _view_tile(view: Value) -> TileType | None:
    pv = view.type
    if isinstance(pv, PartitionViewType):
        return TileType(pv.tile_shape, pv.tensor_view.element)
    return None


@rule("load_view_tko")
def _load_view(op: Op) -> list[str]:
    view, _, _, problems = _view_index(op, 1)
    if view is None:
        return problems
    want = _view_tile(view)
    got = [str(r.type) for r in op.results]
    if want is not None and got != [str(want), "token"]:
        problems.append(f"results must be ({want}, token), got ({', '.join(got)})")
    return problems


@rule("store_view_tko")
def _store_view(op: Op) -> list[str]:
    view, _, _, problems = _view_index(op, 2)
    if view is None:
        return problems
    want = _view_tile(view)
    if want is not None and op.operands[0].type != want:
        problems.append(f"stores {op.operands[0].type} into tiles of {want}")
    if [str(r.type) for r in op.results] != ["token"]:
        problems.append("result must be a token")
    return problems


@rule("get_index_space_shape", "get_tensor_shape")
def _view_shape(op: Op) -> list[str]:
    problems = counts(op, 1, None)
    if problems:
        return problems
    src = op.operands[0].type
    if op.name == "get_tensor_shape":
        rank = src.rank if isinstance(src, TensorViewType) else None
    else:
        rank = len(src.tile_shape) if isinstance(src, PartitionViewType) else None
    if rank is None:
        return [f"cannot query the shape of {src}"]
    if len(op.results) != rank or any(not is_scalar_int(r.type) for r in op.results):
        problems.append(f"yields {rank} rank-0 integer tiles")
    return problems


def _optional(op: Op, fixed: int, markers: Sequence[str]) -> tuple[list[Value | None], list[str]]:
    rest = list(op.operands[fixed:])
    present = [bool(op.attrs.get(m)) for m in markers]
    if len(rest) != sum(present):
        return [], [f"{len(rest)} optional operands but markers say {sum(present)}"]
    it = iter(rest)
    return [next(it) if p else None for p in present], []


def _mask_ok(mask: Value | None, ptrs: Type) -> bool:
    return mask is None or (is_i1(mask.type) and same_shape(mask.type, ptrs))


def _token_ok(token: Value | None) -> bool:
    return token is None or isinstance(token.type, TokenType)


def _pointee_tile(ptrs: Type) -> TileType | None:
    if isinstance(ptrs, TileType) and isinstance(ptrs.element, PointerType):
        return TileType(ptrs.shape, ptrs.element.pointee)
    return None


@rule("load_ptr_tko")
def _load_ptr(op: Op) -> list[str]:
    if not op.operands or len(op.results) != 2:
        return ["expects pointers and two results"]
    (mask, pad, token), problems = _optional(op, 1, ("has_mask", "has_padding_value", "has_token"))
    if problems:
        return problems
    want = _pointee_tile(op.operands[0].type)
    if want is None:
        return [f"loads through a pointer tile, got {op.operands[0].type}"]
    if str(op.results[0].type) != str(want) or not isinstance(op.results[1].type, TokenType):
        problems.append(f"results must be ({want}, token)")
    if not _mask_ok(mask, want) or (pad is not None and pad.type != want) or not _token_ok(token):
        problems.append("mask, padding or token has the wrong type")
    return problems


@rule("store_ptr_tko")
def _store_ptr(op: Op) -> list[str]:
    if len(op.operands) < 2 or len(op.results) != 1:
        return ["expects pointers, a value and one result"]
    (mask, token), problems = _optional(op, 2, ("has_mask", "has_token"))
    if problems:
        return problems
    want = _pointee_tile(op.operands[0].type)
    if want is None or op.operands[1].type != want:
        problems.append(f"stores {op.operands[1].type} through {op.operands[0].type}")
    elif not _mask_ok(mask, want) or not _token_ok(token):
        problems.append("mask or token has the wrong type")
    if not isinstance(op.results[0].type, TokenType):
        problems.append("result must be a token")
    return problems


@rule("atomic_rmw_tko", "atomic_cas_tko")
def _atomic(op: Op) -> list[str]:
    fixed = 2 if op.name == "atomic_rmw_tko" else 3
    if len(op.operands) < fixed or len(op.results) != 2:
        return [f"expects {fixed} operands and two results"]
    (mask, token), problems = _optional(op, fixed, ("has_mask", "has_token"))
    if problems:
        return problems
    want = _pointee_tile(op.operands[0].type)
    values = op.operands[1:fixed]
    if want is None or any(v.type != want for v in values) or op.results[0].type != want:
        problems.append(f"values must be {want} for pointers {op.operands[0].type}")
    if not _mask_ok(mask, op.operands[0].type) or not _token_ok(token):
        problems.append("mask or token has the wrong type")
    if op.attrs.get("memory_ordering_semantics") == "weak":
        problems.append("atomics cannot be `weak`")
    return problems


@rule("offset")
def _offset(op: Op) -> list[str]:
    problems = counts(op, 2, 1)
    if problems:
        return problems
    ptr, off = op.operands
    if not is_ptr_tile(ptr.type) or not is_kind(off.type, "int"):
        problems.append("offsets a pointer tile by an integer tile")
    elif not same_shape(ptr.type, off.type) or op.results[0].type != ptr.type:
        problems.append("pointer, offset and result shapes must match")
    return problems
